"""Sentiment classifier: a small BERT-like transformer encoder written in numpy.

Weights are generated from a fixed seed instead of being trained or downloaded, so the repository
works offline and every run gives the same answers. To make those answers mean something, the
embeddings of words from lexicon.tsv carry their polarity along one fixed direction of the hidden
space, the random layers are kept small enough that the residual stream preserves it, and the
classification head reads that direction after masked mean pooling.
"""

import os

import numpy as np
import triton_python_backend_utils as pb_utils

SEED = 1234
SEQ_LEN = 128
HIDDEN = 256
HEADS = 4
FFN = 1024
LAYERS = 2
# Scale of the random weights: small, as at initialisation, so each layer perturbs the residual
# stream by roughly a tenth of its norm and the sentiment direction survives both layers.
INIT_STD = 0.02
# Length of the polarity vector added to a lexicon word's embedding (random rows have norm ~0.3):
# after the embedding layer norm the polarity dominates that token's representation.
SENTIMENT_GAIN = 1.0
# How strongly the head turns the pooled polarity into a logit gap; 1.0 puts one sentiment word
# in a ten-token sentence at about 0.8.
HEAD_GAIN = 1.0
LN_EPS = 1e-12


def _layer_norm(x, gamma, beta):
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + LN_EPS) * gamma + beta


def _gelu(x):
    # x*x*x, not x**3: numpy's float32 power is an order of magnitude slower.
    return 0.5 * x * (1.0 + np.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _find_vocab(model_dir):
    """The classifier must index embeddings with the ids the tokenizer emits, so it reads the
    tokenizer's own vocabulary (its newest version, as the ensemble uses version -1)."""
    tokenizer_dir = os.path.join(os.path.dirname(os.path.normpath(model_dir)), "bert_tokenizer")
    versions = []
    if os.path.isdir(tokenizer_dir):
        versions = sorted(
            (int(v) for v in os.listdir(tokenizer_dir)
             if v.isdigit() and not (len(v) > 1 and v.startswith("0"))
             and os.path.isfile(os.path.join(tokenizer_dir, v, "vocab.txt"))),
            reverse=True)
    if not versions:
        raise pb_utils.TritonModelException(
            "sentiment_classifier needs the bert_tokenizer model next to it in the model "
            f"repository (expected {tokenizer_dir}/<version>/vocab.txt): its vocabulary defines "
            "the token ids")
    return os.path.join(tokenizer_dir, str(versions[0]), "vocab.txt")


def _load_lexicon(path):
    lexicon = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) != 2:
                raise pb_utils.TritonModelException(
                    f"{path}: expected 'word<TAB>+1' or 'word<TAB>-1', got {line!r}")
            lexicon[fields[0]] = float(fields[1])
    return lexicon


def _bad_input(message):
    # INVALID_ARG makes Triton answer 400 (the client's mistake) rather than 500.
    return pb_utils.InferenceResponse(
        error=pb_utils.TritonError(message, pb_utils.TritonError.INVALID_ARG))


class TritonPythonModel:
    def initialize(self, args):
        model_dir = args["model_repository"]
        vocab_path = _find_vocab(model_dir)
        with open(vocab_path, encoding="utf-8") as f:
            vocab = [line.rstrip("\n") for line in f]
        token_ids = {tok: i for i, tok in enumerate(vocab) if tok}
        self.vocab_size = len(vocab)
        lexicon = _load_lexicon(os.path.join(model_dir, args["model_version"], "lexicon.tsv"))
        unknown = sorted(w for w in lexicon if w not in token_ids)
        if unknown:
            pb_utils.Logger.log_warn(
                f"sentiment_classifier: {len(unknown)} lexicon words are not single tokens of "
                f"{vocab_path} and carry no sentiment: {', '.join(unknown[:10])}")

        rng = np.random.default_rng(SEED)
        direction = rng.standard_normal(HIDDEN)
        # Zero mean across features, so layer norm's centring cannot erase the direction.
        direction -= direction.mean()
        direction /= np.linalg.norm(direction)

        def weights(*shape):
            return rng.normal(0.0, INIT_STD, shape)

        def without_direction(w):
            # Words outside the lexicon (and positions) must not lean either way.
            return w - np.outer(w @ direction, direction)

        tok_emb = without_direction(weights(self.vocab_size, HIDDEN))
        for word, polarity in lexicon.items():
            if word in token_ids:
                tok_emb[token_ids[word]] += polarity * SENTIMENT_GAIN * direction
        self.tok_emb = tok_emb.astype(np.float32)
        self.pos_emb = without_direction(weights(SEQ_LEN, HIDDEN)).astype(np.float32)
        self.emb_ln = (np.ones(HIDDEN, np.float32), np.zeros(HIDDEN, np.float32))

        def f32(*shape):
            return weights(*shape).astype(np.float32)

        self.layers = []
        for _ in range(LAYERS):
            self.layers.append({
                "qkv": f32(HIDDEN, 3 * HIDDEN), "qkv_b": np.zeros(3 * HIDDEN, np.float32),
                "out": f32(HIDDEN, HIDDEN), "out_b": np.zeros(HIDDEN, np.float32),
                "ln1": (np.ones(HIDDEN, np.float32), np.zeros(HIDDEN, np.float32)),
                "ffn1": f32(HIDDEN, FFN), "ffn1_b": np.zeros(FFN, np.float32),
                "ffn2": f32(FFN, HIDDEN), "ffn2_b": np.zeros(HIDDEN, np.float32),
                "ln2": (np.ones(HIDDEN, np.float32), np.zeros(HIDDEN, np.float32)),
            })
        # No random part here: read through a random head, text without sentiment words would
        # lean to one side by whatever the pooled vector happens to contain.
        half = 0.5 * HEAD_GAIN * direction
        self.head = np.stack([-half, half], axis=1).astype(np.float32)
        self.head_b = np.zeros(2, np.float32)
        self.torch = None
        if args["model_instance_kind"] == "GPU":
            self._to_gpu(int(args["model_instance_device_id"]))

    def _to_gpu(self, device_id):
        """KIND_AUTO gives this model GPU instances wherever there is a GPU (the article's BERT on
        GPU 0). The same weights then run in PyTorch on that GPU; without PyTorch the instance
        says so in the log and computes on the CPU instead."""
        try:
            import torch
        except ImportError:
            pb_utils.Logger.log_warn(
                "sentiment_classifier: GPU instance but PyTorch is not importable; computing on the CPU "
                "(with triton-dev's local runtime, `triton-dev setup --with-site-packages` with a Python that has torch)")
            return
        self.torch = torch
        self.device = torch.device(f"cuda:{device_id}")

        def t(a):
            return torch.from_numpy(np.ascontiguousarray(a)).to(self.device)

        self.t_tok_emb, self.t_pos_emb = t(self.tok_emb), t(self.pos_emb)
        self.t_emb_ln = tuple(t(a) for a in self.emb_ln)
        self.t_layers = [
            {k: (tuple(t(a) for a in v) if isinstance(v, tuple) else t(v)) for k, v in layer.items()}
            for layer in self.layers
        ]
        self.t_head, self.t_head_b = t(self.head), t(self.head_b)

    def _forward_torch(self, ids, mask):
        torch = self.torch
        F = torch.nn.functional
        length = int(np.max(np.nonzero(mask.any(axis=0))[0], initial=0)) + 1
        batch = ids.shape[0]
        head_dim = HIDDEN // HEADS
        with torch.inference_mode():
            ids_t = torch.from_numpy(np.ascontiguousarray(ids[:, :length])).to(self.device)
            mask_t = torch.from_numpy(np.ascontiguousarray(mask[:, :length], dtype=np.float32)).to(self.device)
            x = F.layer_norm(self.t_tok_emb[ids_t] + self.t_pos_emb[:length], (HIDDEN,), *self.t_emb_ln, eps=LN_EPS)
            key_bias = ((1.0 - mask_t) * -1e9)[:, None, None, :]
            for layer in self.t_layers:
                flat = x.reshape(batch * length, HIDDEN)
                qkv = (flat @ layer["qkv"] + layer["qkv_b"]).reshape(batch, length, 3, HEADS, head_dim)
                q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
                scores = q @ k.transpose(-1, -2) / float(np.sqrt(head_dim)) + key_bias
                context = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(batch * length, HIDDEN)
                attn = context @ layer["out"] + layer["out_b"]
                flat = F.layer_norm(flat + attn, (HIDDEN,), *layer["ln1"], eps=LN_EPS)
                ffn = F.gelu(flat @ layer["ffn1"] + layer["ffn1_b"], approximate="tanh") @ layer["ffn2"] + layer["ffn2_b"]
                x = F.layer_norm(flat + ffn, (HIDDEN,), *layer["ln2"], eps=LN_EPS).reshape(batch, length, HIDDEN)
            counts = torch.clamp(mask_t.sum(dim=1, keepdim=True), min=1.0)
            pooled = (x * mask_t[:, :, None]).sum(dim=1) / counts
            return torch.softmax(pooled @ self.t_head + self.t_head_b, dim=-1).float().cpu().numpy()

    def _forward(self, ids, mask):
        # Positions after the last real token only hold padding, which attention masks out and
        # pooling skips, so the batch is cut to its longest sequence.
        length = int(np.max(np.nonzero(mask.any(axis=0))[0], initial=0)) + 1
        ids, mask = ids[:, :length], mask[:, :length].astype(np.float32)
        batch = ids.shape[0]
        head_dim = HIDDEN // HEADS

        x = _layer_norm(self.tok_emb[ids] + self.pos_emb[:length], *self.emb_ln)
        # Large negative rather than -inf: a row with no real token then gets a uniform softmax,
        # not NaN.
        key_bias = ((1.0 - mask) * -1e9)[:, None, None, :]
        for layer in self.layers:
            flat = x.reshape(batch * length, HIDDEN)
            qkv = (flat @ layer["qkv"] + layer["qkv_b"]).reshape(batch, length, 3, HEADS, head_dim)
            q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(head_dim)) + key_bias
            context = (_softmax(scores) @ v).transpose(0, 2, 1, 3).reshape(batch * length, HIDDEN)
            attn = context @ layer["out"] + layer["out_b"]
            flat = _layer_norm(flat + attn, *layer["ln1"])
            ffn = _gelu(flat @ layer["ffn1"] + layer["ffn1_b"]) @ layer["ffn2"] + layer["ffn2_b"]
            x = _layer_norm(flat + ffn, *layer["ln2"]).reshape(batch, length, HIDDEN)

        counts = np.maximum(mask.sum(axis=1, keepdims=True), 1.0)
        pooled = (x * mask[:, :, None]).sum(axis=1) / counts
        return _softmax(pooled @ self.head + self.head_b).astype(np.float32)

    def _check(self, ids, mask):
        if ids.shape != mask.shape:
            return (f"input_ids {list(ids.shape)} and attention_mask {list(mask.shape)} "
                    "must have the same shape")
        if ids.size and (ids.min() < 0 or ids.max() >= self.vocab_size):
            return (f"input_ids must lie in [0, {self.vocab_size}) (the bert_tokenizer "
                    f"vocabulary), got values from {ids.min()} to {ids.max()}")
        if not np.isin(mask, (0, 1)).all():
            return "attention_mask must contain only 0 and 1"
        return None

    def execute(self, requests):
        responses = [None] * len(requests)
        valid, id_parts, mask_parts = [], [], []
        for n, request in enumerate(requests):
            ids = pb_utils.get_input_tensor_by_name(request, "input_ids").as_numpy()
            mask = pb_utils.get_input_tensor_by_name(request, "attention_mask").as_numpy()
            problem = self._check(ids, mask)
            if problem:
                responses[n] = _bad_input(problem)
                continue
            valid.append(n)
            id_parts.append(ids)
            mask_parts.append(mask)
        if valid:
            # One forward pass over every request's rows: the point of dynamic batching.
            forward = self._forward_torch if self.torch is not None else self._forward
            probs = forward(np.concatenate(id_parts), np.concatenate(mask_parts))
            offset = 0
            for n, ids in zip(valid, id_parts):
                rows = probs[offset:offset + ids.shape[0]]
                offset += ids.shape[0]
                responses[n] = pb_utils.InferenceResponse(
                    output_tensors=[pb_utils.Tensor("output", rows)])
        return responses
