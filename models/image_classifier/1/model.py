"""Image classifier shaped like an fp16 ResNet-50 deployment, written in numpy.

The network is a small patch-based vision model: a 16x16 patchify stem, one residual MLP block,
global average pooling and a wide classifier head. Weights come from a fixed seed and are kept in
float16, as an fp16 engine would hold them.

Its cost has the structure that makes dynamic batching worthwhile on real hardware: every call
first up-casts all weights to float32 (numpy has no fast float16 matrix multiply), a fixed cost
that does not depend on the batch size, and then does the per-image work in one batched chain of
matrix multiplies over every request that Triton grouped into the call.
"""

import numpy as np
import triton_python_backend_utils as pb_utils

SEED = 50
IMAGE = 224
PATCH = 16
GRID = IMAGE // PATCH
TOKENS = GRID * GRID
PATCH_DIM = 3 * PATCH * PATCH
WIDTH = 256
MLP_HIDDEN = 256
# The head carries most of the parameters, as fully connected heads do (VGG's are 4096 wide):
# it sets the fixed per-call up-cast cost while adding little work per image.
HEAD_HIDDEN = 4096
CLASSES = 1000
LN_EPS = 1e-6


def _layer_norm(x, gamma, beta):
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + LN_EPS) * gamma + beta


def _gelu_(x):
    """tanh-approximated GELU, overwriting x.

    Activations here are tens of megabytes per call; computing in place avoids allocating (and
    page-faulting in) a fresh temporary for every elementwise step. x*x*x, not x**3: numpy's
    float32 power is an order of magnitude slower.
    """
    t = x * x
    t *= x
    t *= 0.044715
    t += x
    t *= 0.7978845608
    np.tanh(t, out=t)
    t += 1.0
    x *= t
    x *= 0.5
    return x


def _bad_input(message):
    # INVALID_ARG makes Triton answer 400 (the client's mistake) rather than 500.
    return pb_utils.InferenceResponse(
        error=pb_utils.TritonError(message, pb_utils.TritonError.INVALID_ARG))


class TritonPythonModel:
    def initialize(self, args):
        rng = np.random.default_rng(SEED)

        def dense(fan_in, fan_out):
            # Variance 1/fan_in keeps activations of order one through the chain.
            return rng.normal(0.0, fan_in ** -0.5, (fan_in, fan_out)).astype(np.float16)

        def zeros(n):
            return np.zeros(n, np.float16)

        def ones(n):
            return np.ones(n, np.float16)

        self.weights16 = {
            "patch_w": dense(PATCH_DIM, WIDTH), "patch_b": zeros(WIDTH),
            "pos": rng.normal(0.0, 0.02, (TOKENS, WIDTH)).astype(np.float16),
            "mlp_ln_g": ones(WIDTH), "mlp_ln_b": zeros(WIDTH),
            "mlp_w1": dense(WIDTH, MLP_HIDDEN), "mlp_b1": zeros(MLP_HIDDEN),
            "mlp_w2": dense(MLP_HIDDEN, WIDTH), "mlp_b2": zeros(WIDTH),
            "pool_ln_g": ones(WIDTH), "pool_ln_b": zeros(WIDTH),
            "head_w1": dense(WIDTH, HEAD_HIDDEN), "head_b1": zeros(HEAD_HIDDEN),
            "head_w2": dense(HEAD_HIDDEN, CLASSES), "head_b2": zeros(CLASSES),
        }

    def _forward(self, images):
        # Per call, not once in initialize: float16 storage halves the weights' memory, and this
        # up-cast becomes the fixed cost every execution pays whatever its batch size.
        w = {name: value.astype(np.float32) for name, value in self.weights16.items()}
        n = images.shape[0]
        patches = (images.reshape(n, 3, GRID, PATCH, GRID, PATCH)
                   .transpose(0, 2, 4, 1, 3, 5)
                   .reshape(n * TOKENS, PATCH_DIM))
        x = (patches @ w["patch_w"]).reshape(n, TOKENS, WIDTH)
        x += w["patch_b"]
        x += w["pos"]
        x = x.reshape(n * TOKENS, WIDTH)
        h = _layer_norm(x, w["mlp_ln_g"], w["mlp_ln_b"]) @ w["mlp_w1"]
        h += w["mlp_b1"]
        h = _gelu_(h) @ w["mlp_w2"]
        h += w["mlp_b2"]
        x += h
        pooled = x.reshape(n, TOKENS, WIDTH).mean(axis=1)
        pooled = _layer_norm(pooled, w["pool_ln_g"], w["pool_ln_b"])
        hidden = pooled @ w["head_w1"]
        hidden += w["head_b1"]
        logits = _gelu_(hidden) @ w["head_w2"] + w["head_b2"]
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)

    def execute(self, requests):
        responses = [None] * len(requests)
        valid, parts = [], []
        for i, request in enumerate(requests):
            images = pb_utils.get_input_tensor_by_name(request, "input_1").as_numpy()
            if images.shape[1:] != (3, IMAGE, IMAGE):
                responses[i] = _bad_input(f"input_1 must have shape [batch, 3, {IMAGE}, {IMAGE}], "
                                          f"got {list(images.shape)}")
            elif not np.isfinite(images).all():
                responses[i] = _bad_input("input_1 contains NaN or infinite values")
            else:
                valid.append(i)
                parts.append(images)
        if valid:
            # One pass over all grouped requests, so the fixed cost is paid once per call.
            probs = self._forward(np.concatenate(parts) if len(parts) > 1 else parts[0])
            offset = 0
            for i, images in zip(valid, parts):
                rows = probs[offset:offset + images.shape[0]]
                offset += images.shape[0]
                responses[i] = pb_utils.InferenceResponse(
                    output_tensors=[pb_utils.Tensor("predictions", rows)])
        return responses
