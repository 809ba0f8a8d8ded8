"""Streaming tokenizer: text in, one response per WordPiece token out, then the final flag.

Decoupled, so each token leaves as soon as it is computed, the way a token generator streams. The
per-token work is real: the token's hashed character trigrams through a small fixed-seed
projection (numpy), scored against the running context of the tokens before it.
"""

import os
import unicodedata
import zlib

import numpy as np
import triton_python_backend_utils as pb_utils

# Streams are bounded: a long text gives its first MAX_TOKENS tokens.
MAX_TOKENS = 256
MAX_CHARS_PER_WORD = 100
DIM = 256
BUCKETS = 4096


def _is_punctuation(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _basic_tokenize(text):
    """Lowercase, strip accents, split on whitespace and punctuation (as bert_tokenizer does)."""
    text = unicodedata.normalize("NFD", text.lower())
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Mn")
    words = []
    for chunk in text.split():
        current = []
        for ch in chunk:
            if _is_punctuation(ch):
                if current:
                    words.append("".join(current))
                    current = []
                words.append(ch)
            else:
                current.append(ch)
        if current:
            words.append("".join(current))
    return words


class TritonPythonModel:
    def initialize(self, args):
        path = os.path.join(args["model_repository"], args["model_version"], "vocab.txt")
        if not os.path.isfile(path):
            raise pb_utils.TritonModelException(f"text_streamer: vocabulary not found at {path}")
        with open(path, encoding="utf-8") as f:
            tokens = [line.rstrip("\n") for line in f]
        self.vocab = {tok: i for i, tok in enumerate(tokens) if tok}
        if "[UNK]" not in self.vocab:
            raise pb_utils.TritonModelException(f"text_streamer: {path} lacks the [UNK] token")
        self.unk_id = self.vocab["[UNK]"]
        rng = np.random.default_rng(15)
        self.projection = (rng.standard_normal((BUCKETS, DIM)) / np.sqrt(DIM)).astype(np.float32)
        self.mix = (rng.standard_normal((DIM, DIM)) / np.sqrt(DIM)).astype(np.float32)

    def _wordpiece(self, word):
        if len(word) > MAX_CHARS_PER_WORD:
            return [("[UNK]", self.unk_id)]
        pieces = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                if piece in self.vocab:
                    found = (piece, self.vocab[piece])
                    break
                end -= 1
            if found is None:
                return [("[UNK]", self.unk_id)]
            pieces.append(found)
            start = end
        return pieces

    def _embed(self, piece):
        padded = f"<{piece}>"
        # crc32, not hash(): str hashes change with every process, the scores must not.
        buckets = [zlib.crc32(padded[i:i + 3].encode("utf-8")) % BUCKETS for i in range(max(1, len(padded) - 2))]
        v = np.tanh(self.projection[buckets].sum(axis=0) @ self.mix)
        return v / (np.linalg.norm(v) + 1e-6)

    def _stream(self, request):
        sender = request.get_response_sender()
        final = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL
        texts = pb_utils.get_input_tensor_by_name(request, "TEXT").as_numpy().reshape(-1)
        if texts.size != 1:
            sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError(
                f"TEXT must hold one string, got {texts.size}", pb_utils.TritonError.INVALID_ARG)), flags=final)
            return
        text = texts[0].decode("utf-8", errors="replace") if isinstance(texts[0], bytes) else str(texts[0])
        words = _basic_tokenize(text)
        if not words:
            # An error ends the stream: the request is answered once, with what was wrong.
            sender.send(pb_utils.InferenceResponse(error=pb_utils.TritonError(
                "TEXT has no words to tokenize", pb_utils.TritonError.INVALID_ARG)), flags=final)
            return
        context = np.zeros(DIM, dtype=np.float32)
        sent = 0
        for word in words:
            for piece, token_id in self._wordpiece(word):
                if sent >= MAX_TOKENS:
                    break
                v = self._embed(piece)
                score = float(v @ context) if sent else 0.0
                context = 0.8 * context + v
                sender.send(pb_utils.InferenceResponse(output_tensors=[
                    pb_utils.Tensor("TOKEN_ID", np.array([token_id], dtype=np.int64)),
                    pb_utils.Tensor("SCORE", np.array([score], dtype=np.float32)),
                ]))
                sent += 1
        sender.send(flags=final)

    def execute(self, requests):
        for request in requests:
            self._stream(request)
        # Decoupled: every answer went through the requests' response senders.
        return None
