"""Writes the sample repository's bert_large, the article's ONNX model role, as a real ONNX model
(models/bert_large/1/model.onnx; fixed-seed weights: token embeddings over bert_tokenizer's
vocabulary, mean pooling under the attention mask, a tanh layer and a two-class softmax; under
1 MB). Its config (models/bert_large/config.pbtxt) and the tokenizer -> bert_large ensemble
`bert_pipeline` are written by hand; run this again only when the vocabulary or the graph changes.

    python3 examples/make-article.py [OUT]  (numpy and onnx; the tests' own Python has both)

OUT defaults to models/bert_large/1/model.onnx; test/integration/local-backends.test.ts writes it
elsewhere and checks the shipped file is the same, byte for byte.

The local runtime serves bert_large through ONNX Runtime in the python backend; docker, kind and
cluster through the onnxruntime backend of the image.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "models", "bert_large", "1", "model.onnx")
SEQ, HIDDEN = 128, 64

vocab = [l.rstrip("\n") for l in open(os.path.join(ROOT, "models/bert_tokenizer/1/vocab.txt"), encoding="utf-8")]
rng = np.random.default_rng(20241010)
weights = [
    numpy_helper.from_array((rng.standard_normal((len(vocab), HIDDEN)) * 0.5).astype(np.float32), "embeddings"),
    numpy_helper.from_array((rng.standard_normal((HIDDEN, HIDDEN)) / np.sqrt(HIDDEN)).astype(np.float32), "dense_w"),
    numpy_helper.from_array(np.zeros(HIDDEN, dtype=np.float32), "dense_b"),
    numpy_helper.from_array((rng.standard_normal((HIDDEN, 2)) / np.sqrt(HIDDEN)).astype(np.float32), "classifier_w"),
    numpy_helper.from_array(np.zeros(2, dtype=np.float32), "classifier_b"),
    numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
    numpy_helper.from_array(np.array([-1], dtype=np.int64), "axis_last"),
    numpy_helper.from_array(np.array([1e-6], dtype=np.float32), "eps"),
]
nodes = [
    helper.make_node("Gather", ["embeddings", "input_ids"], ["tokens"]),  # [N, SEQ, H]
    helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=T.FLOAT),  # [N, SEQ]
    helper.make_node("Unsqueeze", ["mask_f", "axis_last"], ["mask3"]),  # [N, SEQ, 1]
    helper.make_node("Mul", ["tokens", "mask3"], ["masked"]),
    helper.make_node("ReduceSum", ["masked", "axis1"], ["summed"], keepdims=0),  # [N, H]
    helper.make_node("ReduceSum", ["mask3", "axis1"], ["count"], keepdims=0),  # [N, 1]
    helper.make_node("Add", ["count", "eps"], ["count_eps"]),
    helper.make_node("Div", ["summed", "count_eps"], ["pooled"]),
    helper.make_node("Gemm", ["pooled", "dense_w", "dense_b"], ["dense"]),
    helper.make_node("Tanh", ["dense"], ["hidden"]),
    helper.make_node("Gemm", ["hidden", "classifier_w", "classifier_b"], ["logits"]),
    helper.make_node("Softmax", ["logits"], ["output"], axis=-1),
]
graph = helper.make_graph(
    nodes,
    "bert_large",
    [
        helper.make_tensor_value_info("input_ids", T.INT64, ["batch", SEQ]),
        helper.make_tensor_value_info("attention_mask", T.INT64, ["batch", SEQ]),
    ],
    [helper.make_tensor_value_info("output", T.FLOAT, ["batch", 2])],
    weights,
)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="triton-dev examples/make-article.py")
model.ir_version = 8
onnx.checker.check_model(model)
os.makedirs(os.path.dirname(OUT), exist_ok=True)
onnx.save(model, OUT)
print("wrote", OUT)
