"""Writes the ONNX models of the model-io tests into the folder named by argv[1], with the onnx
package (as real exporters write them), each checked by onnx.checker (shapes.onnx aside, see there):

  add.onnx       INPUT0 FLOAT [batch,4] + W, OUTPUT0 FLOAT [batch,4]; W is an initializer also
                 listed as a graph input (old exporters do that), so it is not an input
  fixed.onnx     INPUT0 FLOAT [2,4] -> OUTPUT0 FLOAT [2,4]: no batch dimension
  add2.onnx      INPUT0 + INPUT1, both FLOAT [batch,4], -> OUTPUT0 FLOAT [batch,4]: two inputs
  types.onnx     one Identity per element type, inputs in_<type> -> outputs out_<type>
  shapes.onnx    a scalar input (shape []) and one with no shape at all
  sequence.onnx  a sequence input, which Triton cannot serve
  external.onnx  add.onnx with W's data in external.bin (onnx.save save_as_external_data)
  inline32m.onnx add.onnx with an 32 MiB initializer inline (raw_data)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)


def save(model, name, check=True, **kw):
    model.ir_version = 8
    if check:
        onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, name), **kw)


def add_model(weights):
    x = helper.make_tensor_value_info("INPUT0", TensorProto.FLOAT, ["batch", 4])
    w = helper.make_tensor_value_info("W", TensorProto.FLOAT, list(weights.shape))
    y = helper.make_tensor_value_info("OUTPUT0", TensorProto.FLOAT, ["batch", 4])
    nodes = [helper.make_node("ReduceSum", ["W"], ["Wsum"], keepdims=0),
             helper.make_node("Add", ["INPUT0", "Wsum"], ["OUTPUT0"])] if weights.size != 4 else [
                 helper.make_node("Add", ["INPUT0", "W"], ["OUTPUT0"])]
    g = helper.make_graph(nodes, "add", [x, w], [y], [numpy_helper.from_array(weights, "W")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


save(add_model(np.ones(4, dtype=np.float32)), "add.onnx")

x = helper.make_tensor_value_info("INPUT0", TensorProto.FLOAT, [2, 4])
y = helper.make_tensor_value_info("OUTPUT0", TensorProto.FLOAT, [2, 4])
save(helper.make_model(helper.make_graph([helper.make_node("Identity", ["INPUT0"], ["OUTPUT0"])], "fixed", [x], [y]),
                       opset_imports=[helper.make_opsetid("", 13)]), "fixed.onnx")

a = helper.make_tensor_value_info("INPUT0", TensorProto.FLOAT, ["batch", 4])
b = helper.make_tensor_value_info("INPUT1", TensorProto.FLOAT, ["batch", 4])
y = helper.make_tensor_value_info("OUTPUT0", TensorProto.FLOAT, ["batch", 4])
save(helper.make_model(helper.make_graph([helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"])], "add2", [a, b], [y]),
                       opset_imports=[helper.make_opsetid("", 13)]), "add2.onnx")

types = {"f32": TensorProto.FLOAT, "i64": TensorProto.INT64, "str": TensorProto.STRING, "bool": TensorProto.BOOL,
         "f16": TensorProto.FLOAT16, "f64": TensorProto.DOUBLE, "bf16": TensorProto.BFLOAT16,
         "u8": TensorProto.UINT8, "i32": TensorProto.INT32, "c64": TensorProto.COMPLEX64}
ins = [helper.make_tensor_value_info(f"in_{k}", t, ["n"]) for k, t in types.items()]
outs = [helper.make_tensor_value_info(f"out_{k}", t, ["n"]) for k, t in types.items()]
nodes = [helper.make_node("Identity", [f"in_{k}"], [f"out_{k}"]) for k in types]
save(helper.make_model(helper.make_graph(nodes, "types", ins, outs), opset_imports=[helper.make_opsetid("", 19)]),
     "types.onnx")

s = helper.make_tensor_value_info("scalar", TensorProto.FLOAT, [])
u = helper.make_tensor_value_info("unshaped", TensorProto.FLOAT, None)
so = helper.make_tensor_value_info("scalar_out", TensorProto.FLOAT, [])
uo = helper.make_tensor_value_info("unshaped_out", TensorProto.FLOAT, None)
save(helper.make_model(helper.make_graph([helper.make_node("Identity", ["scalar"], ["scalar_out"]),
                                          helper.make_node("Identity", ["unshaped"], ["unshaped_out"])],
                                         "shapes", [s, u], [so, uo]), opset_imports=[helper.make_opsetid("", 13)]),
     "shapes.onnx", check=False)  # the checker wants every graph input shaped; onnxruntime does not

seq = helper.make_tensor_sequence_value_info("seq", TensorProto.FLOAT, None)
n = helper.make_tensor_value_info("length", TensorProto.INT64, [])
save(helper.make_model(helper.make_graph([helper.make_node("SequenceLength", ["seq"], ["length"])], "sequence", [seq],
                                         [n]), opset_imports=[helper.make_opsetid("", 13)]), "sequence.onnx")

save(add_model(np.ones(4, dtype=np.float32)), "external.onnx", save_as_external_data=True,
     all_tensors_to_one_file=True, location="external.bin", size_threshold=0)

save(add_model(np.zeros(8 * 1024 * 1024, dtype=np.float32)), "inline32m.onnx")
print("ok")

# simple_sequence's shape (NVIDIA's server examples): the sequence batcher's control inputs are
# graph inputs beside INPUT, which config.pbtxt lists only under sequence_batching.
seq_in = [helper.make_tensor_value_info(n, TensorProto.INT32, ["batch", 1]) for n in ("INPUT", "START", "END", "READY", "CORRID")]
seq_out = helper.make_tensor_value_info("OUTPUT", TensorProto.INT32, ["batch", 1])
save(helper.make_model(helper.make_graph([helper.make_node("Sum", ["INPUT", "START", "END", "READY", "CORRID"], ["OUTPUT"])],
                                         "simple_sequence", seq_in, [seq_out]),
                       opset_imports=[helper.make_opsetid("", 13)]), "simple_sequence.onnx")
