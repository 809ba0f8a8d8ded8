"""BERT-style WordPiece tokenizer: raw text in, fixed-length token ids and attention mask out.

It runs on CPU instances so the classifier's instances spend their time on the network only,
which is the article's CPU pre-processing pattern.
"""

import os
import unicodedata

import numpy as np
import triton_python_backend_utils as pb_utils

SEQ_LEN = 128
# As in BERT: very long "words" are more likely noise (URLs, hashes) than language.
MAX_CHARS_PER_WORD = 100


def _is_punctuation(ch):
    cp = ord(ch)
    # BERT treats every non-alphanumeric ASCII symbol as punctuation ("$", "^", "`"),
    # even those Unicode files under other categories.
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


# CJK ideographs become one word each, as in BERT: these scripts do not put spaces between words.
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def _is_cjk(ch):
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def _is_control(ch):
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch) in ("Cc", "Cf")


def _basic_tokenize(text):
    """Lowercase, strip accents, split on whitespace and punctuation."""
    text = "".join(" " if ch.isspace() else ch
                   for ch in text if ch != "\ufffd" and not _is_control(ch))
    text = unicodedata.normalize("NFD", text.lower())
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Mn")
    words = []
    for chunk in text.split():
        current = []
        for ch in chunk:
            if _is_punctuation(ch) or _is_cjk(ch):
                if current:
                    words.append("".join(current))
                    current = []
                words.append(ch)
            else:
                current.append(ch)
        if current:
            words.append("".join(current))
    return words


def _bad_input(message):
    # INVALID_ARG makes Triton answer 400 (the client's mistake) rather than 500.
    return pb_utils.InferenceResponse(
        error=pb_utils.TritonError(message, pb_utils.TritonError.INVALID_ARG))


class TritonPythonModel:
    def initialize(self, args):
        path = os.path.join(args["model_repository"], args["model_version"], "vocab.txt")
        if not os.path.isfile(path):
            raise pb_utils.TritonModelException(f"bert_tokenizer: vocabulary not found at {path}")
        with open(path, encoding="utf-8") as f:
            tokens = [line.rstrip("\n") for line in f]
        self.vocab = {tok: i for i, tok in enumerate(tokens) if tok}
        missing = [t for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]") if t not in self.vocab]
        if missing:
            raise pb_utils.TritonModelException(
                f"bert_tokenizer: {path} lacks special tokens {missing}")
        self.pad_id = self.vocab["[PAD]"]
        self.unk_id = self.vocab["[UNK]"]
        self.cls_id = self.vocab["[CLS]"]
        self.sep_id = self.vocab["[SEP]"]
        # Real text repeats words heavily, so memoising WordPiece per word removes most of the work.
        self.word_cache = {}

    def _wordpiece(self, word):
        cached = self.word_cache.get(word)
        if cached is not None:
            return cached
        if len(word) > MAX_CHARS_PER_WORD:
            return [self.unk_id]
        ids = []
        start = 0
        while start < len(word):
            end = len(word)
            piece_id = None
            while start < end:
                piece = word[start:end]
                if start > 0:
                    piece = "##" + piece
                piece_id = self.vocab.get(piece)
                if piece_id is not None:
                    break
                end -= 1
            if piece_id is None:
                # One unmatchable character makes the whole word unknown, as BERT does.
                ids = [self.unk_id]
                break
            ids.append(piece_id)
            start = end
        if len(self.word_cache) < 200_000:
            self.word_cache[word] = ids
        return ids

    def _encode(self, text):
        ids = [self.cls_id]
        for word in _basic_tokenize(text):
            ids.extend(self._wordpiece(word))
            if len(ids) >= SEQ_LEN - 1:
                break
        ids = ids[: SEQ_LEN - 1] + [self.sep_id]
        input_ids = np.full(SEQ_LEN, self.pad_id, dtype=np.int64)
        mask = np.zeros(SEQ_LEN, dtype=np.int64)
        input_ids[: len(ids)] = ids
        mask[: len(ids)] = 1
        return input_ids, mask

    def execute(self, requests):
        responses = []
        for request in requests:
            texts = pb_utils.get_input_tensor_by_name(request, "TEXT_INPUT").as_numpy()
            batch = texts.shape[0] if texts.ndim > 0 else 1
            flat = texts.reshape(batch, -1)
            if flat.shape[1] != 1:
                responses.append(_bad_input("TEXT_INPUT must hold one string per batch item, "
                                            f"got shape {list(texts.shape)}"))
                continue
            input_ids = np.empty((batch, SEQ_LEN), dtype=np.int64)
            masks = np.empty((batch, SEQ_LEN), dtype=np.int64)
            for i, item in enumerate(flat[:, 0]):
                if isinstance(item, bytes):
                    item = item.decode("utf-8", errors="replace")
                input_ids[i], masks[i] = self._encode(str(item))
            responses.append(pb_utils.InferenceResponse(output_tensors=[
                pb_utils.Tensor("INPUT_IDS", input_ids),
                pb_utils.Tensor("ATTENTION_MASK", masks),
            ]))
        return responses
