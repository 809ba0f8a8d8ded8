/**
 * The model.py the local runtime's adapter (backend-adapter.ts) writes into each version folder of
 * a staged onnxruntime, openvino or pytorch (TorchScript) model: Triton's python backend runs it,
 * and it opens the model with the backend's own runtime library (one session per instance), checks
 * the config by the
 * C++ backend's rules and refuses it in that backend's words (onnxruntime_backend's
 * ModelInstanceState and CompareDimsSupported, openvino_backend's ValidateConfigureModel, r24.10),
 * maps the parameters that are session options, warns of the execution accelerators it does not
 * offer, and runs the requests Triton's scheduler batched as one batch, giving each its rows.
 */
export const ADAPTER_MODEL_PY = String.raw`
# Written by triton-dev into the staged copy of a model (never into your files): the local
# runtime has no C++ backend for this model, so Triton's python backend runs the backend's own
# runtime library here, with the backend's rules for the config. Triton's scheduling (batching,
# instance groups, sequences, ensembles) is Triton's own and unchanged.
import json
import os
import time

import numpy as np
import triton_python_backend_utils as pb_utils

# The parameters staging writes into the staged config.pbtxt.
P_BACKEND = "TRITON_DEV_ADAPTED_BACKEND"
P_FILE = "TRITON_DEV_ADAPTED_FILE"
P_TORCH_TENSORS = "TRITON_DEV_TORCH_TENSORS"
# The python backend's own: "no" lets Triton hand over inputs in GPU memory where they already are.
P_FORCE_CPU_INPUTS = "FORCE_CPU_ONLY_INPUT_TENSORS"
TORCH_TENSOR_MODES = ("numpy", "dlpack_in", "dlpack")

# Triton's data types and numpy's; BF16 has no numpy type.
NUMPY = {
    "TYPE_BOOL": np.bool_,
    "TYPE_UINT8": np.uint8,
    "TYPE_UINT16": np.uint16,
    "TYPE_UINT32": np.uint32,
    "TYPE_UINT64": np.uint64,
    "TYPE_INT8": np.int8,
    "TYPE_INT16": np.int16,
    "TYPE_INT32": np.int32,
    "TYPE_INT64": np.int64,
    "TYPE_FP16": np.float16,
    "TYPE_FP32": np.float32,
    "TYPE_FP64": np.float64,
    "TYPE_STRING": np.object_,
}

# onnxruntime_backend's ModelConfigDataTypeToOnnxDataType / OnnxDataTypeToModelConfigDataType.
ORT_TYPES = {
    "tensor(bool)": "TYPE_BOOL",
    "tensor(uint8)": "TYPE_UINT8",
    "tensor(uint16)": "TYPE_UINT16",
    "tensor(uint32)": "TYPE_UINT32",
    "tensor(uint64)": "TYPE_UINT64",
    "tensor(int8)": "TYPE_INT8",
    "tensor(int16)": "TYPE_INT16",
    "tensor(int32)": "TYPE_INT32",
    "tensor(int64)": "TYPE_INT64",
    "tensor(float16)": "TYPE_FP16",
    "tensor(float)": "TYPE_FP32",
    "tensor(double)": "TYPE_FP64",
    "tensor(string)": "TYPE_STRING",
}

# openvino_backend's ConvertToOpenVINOElement / OpenVINOElementToModelConfigDataType.
OV_TYPES = {
    "boolean": "TYPE_BOOL",
    "u8": "TYPE_UINT8",
    "u16": "TYPE_UINT16",
    "u32": "TYPE_UINT32",
    "u64": "TYPE_UINT64",
    "i8": "TYPE_INT8",
    "i16": "TYPE_INT16",
    "i32": "TYPE_INT32",
    "i64": "TYPE_INT64",
    "f16": "TYPE_FP16",
    "f32": "TYPE_FP32",
}


class ModelConfigRefused(Exception):
    """What the C++ backend refuses the config with, in its words."""


def shape_str(dims):
    return "[" + ",".join(str(d) for d in dims) + "]"


def param(cfg, key, default=None):
    p = (cfg.get("parameters") or {}).get(key)
    if p is None:
        return default
    return p.get("string_value", default)


def int_param(cfg, name, key, default=0):
    # backend_common's TryParseModelStringParameter: a value that is not an integer is refused.
    v = param(cfg, key)
    if v is None or v == "":
        return default
    try:
        return int(v)
    except ValueError:
        raise ModelConfigRefused(
            "failed to convert '" + v + "' to integral number"
        ) from None


def config_dims(io):
    if "reshape" in io and io["reshape"] is not None:
        return [int(d) for d in io["reshape"].get("shape", [])]
    return [int(d) for d in io.get("dims", [])]


def warn(text):
    pb_utils.Logger.log_warn(text)


def info(text):
    pb_utils.Logger.log_info(text)


def sequence_controls(cfg):
    """The control tensors sequence_batching feeds the model, (name, kind, data_type) each."""
    out = []
    seq = cfg.get("sequence_batching")
    if not seq:
        return out
    for ci in seq.get("control_input", []) or []:
        for c in ci.get("control", []) or []:
            kind = c.get("kind", "CONTROL_SEQUENCE_START")
            # Triton's JSON of the config has "data_type": "TYPE_INVALID" for a control that sets
            # none (the *_false_true kinds): their own field decides then.
            dtype = c.get("data_type")
            if dtype in (None, "", "TYPE_INVALID"):
                dtype = (
                    "TYPE_INT32" if c.get("int32_false_true") else
                    "TYPE_FP32" if c.get("fp32_false_true") else
                    "TYPE_BOOL" if c.get("bool_false_true") else "TYPE_INVALID"
                )
            out.append((ci.get("name", ""), kind, dtype))
    return out


class OnnxRuntimeServing:
    """onnxruntime_backend's ModelState/ModelInstanceState, for one instance, in Python."""

    def __init__(self, cfg, name, path, instance_kind, device_id):
        import onnxruntime as ort

        self.ort = ort
        self.library = "ONNX Runtime " + ort.__version__
        so = ort.SessionOptions()
        level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        graph = ((cfg.get("optimization") or {}).get("graph") or {})
        if "level" in graph:
            lv = int(graph.get("level") or 0)
            level = {
                -1: ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
                1: ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
                2: ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
            }.get(lv, level)
        so.graph_optimization_level = level
        mode = int_param(cfg, name, "execution_mode", 0)
        if mode not in (0, 1):
            raise ModelConfigRefused(
                "Invalid configuration value provided. Expected values for  execution_mode are 0 or 1 but got "
                + str(mode)
                + " ."
            )
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL if mode == 0 else ort.ExecutionMode.ORT_PARALLEL
        intra = int_param(cfg, name, "intra_op_thread_count", 0)
        if intra > 0:
            so.intra_op_num_threads = intra
        inter = int_param(cfg, name, "inter_op_thread_count", 0)
        if inter > 0:
            so.inter_op_num_threads = inter
        arena = param(cfg, "enable_mem_arena")
        if arena is not None:
            so.enable_cpu_mem_arena = parse_bool(arena)
        pattern = param(cfg, "enable_mem_pattern")
        if pattern is not None:
            so.enable_mem_pattern = parse_bool(pattern)
        for lib in ((cfg.get("model_operations") or {}).get("op_library_filename") or []):
            so.register_custom_ops_library(lib)

        providers = ["CPUExecutionProvider"]
        eas = ((cfg.get("optimization") or {}).get("execution_accelerators") or {})
        gpu = instance_kind in ("KIND_GPU", "KIND_AUTO") and "CUDAExecutionProvider" in ort.get_available_providers()
        for ea in eas.get("gpu_execution_accelerator", []) or []:
            n = ea.get("name", "")
            if n == "tensorrt":
                warn(
                    "model '" + name + "': gpu_execution_accelerator 'tensorrt' is not offered by the local runtime "
                    "(" + self.library + " in the python backend); the model runs without it"
                )
            elif n != "cuda":
                raise ModelConfigRefused("unknown Execution Accelerator '" + n + "' is requested")
        for ea in eas.get("cpu_execution_accelerator", []) or []:
            n = ea.get("name", "")
            if n == "openvino":
                warn(
                    "model '" + name + "': cpu_execution_accelerator 'openvino' is not offered by the local runtime "
                    "(" + self.library + " in the python backend); the model runs without it"
                )
            else:
                raise ModelConfigRefused("unknown Execution Accelerator '" + n + "' is requested")
        if gpu:
            providers = [("CUDAExecutionProvider", {"device_id": device_id})] + providers
        self.session = ort.InferenceSession(path, sess_options=so, providers=providers)
        self.inputs = {}
        for i in self.session.get_inputs():
            self.inputs[i.name] = (ORT_TYPES.get(i.type, "TYPE_INVALID"), dims_of(i.shape))
        self.input_count = len(self.inputs)
        self.string_inputs = [n for n, (t, _) in self.inputs.items() if t == "TYPE_STRING"]
        overridable = {}
        for i in self.session.get_overridable_initializers():
            overridable[i.name] = (ORT_TYPES.get(i.type, "TYPE_INVALID"), dims_of(i.shape))
        self.outputs = {}
        for o in self.session.get_outputs():
            self.outputs[o.name] = (ORT_TYPES.get(o.type, "TYPE_INVALID"), dims_of(o.shape))
        self.validate(cfg, name, overridable)

    def validate(self, cfg, name, overridable):
        mbs = int(cfg.get("max_batch_size", 0) or 0)
        inputs = cfg.get("input", []) or []
        expected = sum(0 if io.get("optional") else 1 for io in inputs)
        expected += len(cfg.get("batch_input", []) or [])
        seq = cfg.get("sequence_batching")
        if seq is not None:
            kinds = set()
            for tensor, kind, dtype in sequence_controls(cfg):
                self.validate_control(name, mbs, tensor, dtype)
                kinds.add(kind)
            expected += len(kinds)
            expected += len(seq.get("state", []) or [])
        if self.input_count != expected:
            raise ModelConfigRefused(
                "unable to load model '" + name + "', configuration expects " + str(expected)
                + " inputs, model provides " + str(self.input_count)
            )
        known = dict(self.inputs)
        known.update(overridable)
        allowed = sorted(set(self.inputs) | set(overridable))
        for io in inputs:
            n = io.get("name", "")
            dtype = io.get("data_type", "TYPE_INVALID")
            if io.get("optional") and mbs != 0:
                raise ModelConfigRefused(
                    "unable to load model '" + name + "', optional input '" + n
                    + "' is not supported for models that support batching"
                )
            if n not in known:
                raise ModelConfigRefused("unexpected inference input '" + n + "', allowed inputs are: " + ", ".join(allowed))
            self.check_type(name, "input", n, dtype, known[n][0])
            self.check_dims(name, n, known[n][1], config_dims(io), mbs, io.get("allow_ragged_batch", False))
        outs = sorted(self.outputs)
        for io in cfg.get("output", []) or []:
            n = io.get("name", "")
            dtype = io.get("data_type", "TYPE_INVALID")
            if n not in self.outputs:
                raise ModelConfigRefused(
                    "unexpected inference output '" + n + "', allowed outputs are: " + ", ".join(outs)
                )
            self.check_type(name, "output", n, dtype, self.outputs[n][0])
            model_dims = self.outputs[n][1]
            if model_dims:
                self.check_dims(name, n, model_dims, config_dims(io), mbs, False)

    def validate_control(self, name, mbs, tensor, dtype):
        if tensor not in self.inputs:
            raise ModelConfigRefused(
                "configuration specified sequence control '" + tensor + "', but model does not provide that input"
            )
        t, dims = self.inputs[tensor]
        debatched = dims[1:] if mbs > 0 else dims
        if debatched != [1]:
            raise ModelConfigRefused(
                "unable to load model '" + name + "', sequence control '" + tensor + "' in model has dims "
                + shape_str(debatched) + " but dims [1] is expected"
            )
        if t != dtype:
            raise ModelConfigRefused(
                "unable to load model '" + name + "', sequence control '" + tensor + "', the model expects data-type "
                + onnx_name(t) + " but the model configuration specifies data-type " + dtype
            )

    def check_type(self, name, kind, n, dtype, model_type):
        if dtype not in NUMPY:
            raise ModelConfigRefused("unsupported datatype " + dtype + " for " + kind + " '" + n + "' for model '" + name + "'")
        if dtype != model_type:
            raise ModelConfigRefused(
                "unable to load model '" + name + "', configuration expects datatype " + dtype + " for " + kind
                + " '" + n + "', model provides " + model_type
            )

    def check_dims(self, name, n, model_shape, dims, mbs, ragged):
        if ragged:
            if model_shape != [-1]:
                raise ModelConfigRefused(
                    "unable to load model '" + name + "', configuration expects model provides input with shape [-1]  "
                    "for ragged input '" + n + "', model provides " + shape_str(model_shape)
                )
            return
        if not model_shape:
            if mbs == 0:
                for d in dims:
                    if d != 1:
                        raise ModelConfigRefused(
                            "unable to load model '" + name + "', scalar tensor '" + n + "', should only provide 1 in "
                            "the model configuration when the model doesn't support batching. Model configuration "
                            "provided: " + shape_str(dims) + "."
                        )
            return
        compare_dims(name, n, model_shape, dims, mbs)

    def run(self, feeds, names):
        # Strings go to onnxruntime as str; Triton hands them over as bytes.
        for k in self.string_inputs:
            v = feeds.get(k)
            if v is not None and v.dtype == np.object_:
                feeds[k] = np.array([x.decode("utf-8") if isinstance(x, bytes) else x for x in v.ravel()], dtype=object).reshape(v.shape)
        return self.session.run(names, feeds)


def parse_bool(v):
    s = v.strip().lower()
    if s in ("true", "1", "on", "yes"):
        return True
    if s in ("false", "0", "off", "no"):
        return False
    raise ModelConfigRefused("failed to convert '" + v + "' to boolean value")


def onnx_name(t):
    for k, v in ORT_TYPES.items():
        if v == t:
            return k[7:-1].upper()
    return "UNDEFINED"


def dims_of(shape):
    return [d if isinstance(d, int) and d >= 0 else -1 for d in (shape or [])]


def dims_refused(name, n, model_shape, spec, batched):
    """The dims refusal both backends word alike (spec: the config's dims, with the batch dim if batched)."""
    specified = (
        " dimensions (an initial batch dimension because max_batch_size > 0 followed by the explicit tensor "
        "shape, making complete shape " + shape_str(spec) + ")"
        if batched
        else " dimensions (shape " + shape_str(spec) + ")"
    )
    return ModelConfigRefused(
        "model '" + name + "', tensor '" + n + "': the model expects " + str(len(model_shape))
        + " dimensions (shape " + shape_str(model_shape) + ") but the model configuration specifies "
        + str(len(spec)) + specified
    )


def compare_dims(name, n, model_shape, dims, mbs, exact=False):
    """onnxruntime_utils.cc CompareDimsSupported."""
    if mbs > 0:
        if len(model_shape) == 0 or model_shape[0] != -1:
            raise ModelConfigRefused(
                "model '" + name + "', tensor '" + n + "': for the model to support batching the shape should have at "
                "least 1 dimension and the first dimension must be -1; but shape expected by the model is "
                + shape_str(model_shape)
            )
        full = [-1] + list(dims)
        ok = len(model_shape) == len(full) and all(
            m == f for m, f in zip(model_shape, full) if exact or m != -1
        )
        if not ok:
            raise dims_refused(name, n, model_shape, full, batched=True)
    else:
        ok = len(model_shape) == len(dims) and all(m == d for m, d in zip(model_shape, dims) if exact or m != -1)
        if not ok:
            raise dims_refused(name, n, model_shape, dims, batched=False)


# openvino_backend's CPU properties, by their parameter names, in the order ParseParameters reads them.
OV_PROPERTIES = ("INFERENCE_NUM_THREADS", "COMPILATION_NUM_THREADS", "HINT_BF16", "NUM_STREAMS", "PERFORMANCE_HINT")


def ov_property(key, value):
    """openvino_backend's ParseParameterHelper: the value lower-cased, checked, and the OpenVINO
    property it sets (name, value), or its refusal in its words."""
    v = value.lower()
    number = v.isdigit() or v == ""
    if key in ("INFERENCE_NUM_THREADS", "COMPILATION_NUM_THREADS"):
        if not number:
            raise ModelConfigRefused("expected the parameter '" + key + "' to be a non-negative number, got " + v)
        return key, int(v or 0)
    if key == "HINT_BF16":
        if v != "yes":
            raise ModelConfigRefused("expected the parameter '" + key + "' to be YES, got " + v)
        return "INFERENCE_PRECISION_HINT", "bf16"
    if key == "NUM_STREAMS":
        if v in ("auto", "numa"):
            return key, v.upper()
        if not number:
            raise ModelConfigRefused("expected the parameter '" + key + "' to be either AUTO/NUMA/<int_value>, got " + v)
        return key, int(v or 0)
    if v not in ("latency", "throughput", "cumulative_throughput"):
        raise ModelConfigRefused(
            "expected the parameter '" + key + "' to be LATENCY/THROUGHPUT/CUMULATIVE_THROUGHPUT, got " + v
        )
    return key, v.upper()


class OpenVinoServing:
    """openvino_backend's ModelState (ValidateConfigureModel, ParseParameters), on the CPU, in Python."""

    def __init__(self, cfg, name, path, instance_kind, device_id):
        import openvino as ov

        self.library = "OpenVINO " + ov.__version__.split("-")[0]
        if instance_kind not in ("KIND_CPU", "KIND_AUTO"):
            raise ModelConfigRefused(
                "unable to load model '" + name + "', Triton openVINO backend supports only CPU device"
            )
        core = ov.Core()
        model = core.read_model(path)
        mbs = int(cfg.get("max_batch_size", 0) or 0)
        inputs = cfg.get("input", []) or []
        names = {p.get_any_name(): p for p in model.inputs}
        if len(names) != len(inputs):
            raise ModelConfigRefused(
                "unable to load model '" + name + "', configuration expects " + str(len(inputs))
                + " inputs, model provides " + str(len(names))
            )
        ppp = ov.preprocess.PrePostProcessor(model)
        for io in inputs:
            n = io.get("name", "")
            if n not in names:
                raise ModelConfigRefused("unexpected inference input '" + n + "', allowed inputs are: " + ", ".join(sorted(names)))
            ov_compare_dims(name, n, names[n].get_partial_shape(), config_dims(io), mbs)
            ppp.input(n).tensor().set_element_type(ov_type(ov, name, "input", n, io.get("data_type", "")))
            if mbs:
                ppp.input(n).tensor().set_layout(ov.Layout("N..."))
        outs = {p.get_any_name(): p for p in model.outputs}
        for io in cfg.get("output", []) or []:
            n = io.get("name", "")
            if n not in outs:
                raise ModelConfigRefused("unexpected inference output '" + n + "', allowed outputs are: " + ", ".join(sorted(outs)))
            ov_compare_dims(name, n, outs[n].get_partial_shape(), config_dims(io), mbs, exact=True)
            ppp.output(n).tensor().set_element_type(ov_type(ov, name, "output", n, io.get("data_type", "")))
        model = ppp.build()
        if mbs:
            # The C++ backend fixes the batch at max_batch_size and pads; a dynamic batch serves
            # the same requests without the padding.
            ov.set_batch(model, -1)
        props = []
        for key in OV_PROPERTIES:
            v = param(cfg, key)
            # ReadParameter: an empty value is as good as none.
            if v:
                props.append(ov_property(key, v))
        # ConfigureOpenvinoCore: each property set on the core's CPU device, one at a time, then
        # LoadModel; OpenVINO's own refusals (2024.4's CPU plugin takes no COMPILATION_NUM_THREADS)
        # come worded as the backend's RETURN_IF_OPENVINO_ERROR words them.
        for k, value in props:
            try:
                core.set_property("CPU", {k: value})
            except Exception as e:
                raise ModelConfigRefused("openvino error in configuring openvino core : " + str(e)) from None
        auto_batching = mbs != 0 and not parse_yes(param(cfg, "SKIP_OV_DYNAMIC_BATCHSIZE", ""))
        try:
            self.compiled = core.compile_model(model, "CPU", {"ALLOW_AUTO_BATCHING": auto_batching})
        except Exception as e:
            raise ModelConfigRefused("openvino error in loading model : " + str(e)) from None
        self.request = self.compiled.create_infer_request()

    def run(self, feeds, names):
        # The inputs are read where Triton put them (no copy into OpenVINO's tensors). The outputs
        # are copied: shared, the next infer of this execute would overwrite responses not yet sent.
        result = self.request.infer(feeds, share_inputs=True)
        by_name = {k.get_any_name(): v for k, v in result.items()}
        return [by_name[n] for n in names]


def parse_yes(v):
    """openvino_backend's ParseBoolParameter: "yes" in any case is true, anything else false."""
    return (v or "").lower() == "yes"


def ov_type(ov, name, kind, n, dtype):
    t = {v: k for k, v in OV_TYPES.items()}.get(dtype)
    if t is None:
        raise ModelConfigRefused("unsupported datatype " + dtype + " for " + kind + " '" + n + "' for model '" + name + "'")
    # ov.Type has no constructor from the IR's names, but an attribute for each.
    return getattr(ov.Type, t)


def ov_compare_dims(name, n, shape, dims, mbs, exact=False):
    """openvino_utils.cc CompareDimsSupported; exact (outputs): a -1 in the config matches only a
    dynamic dim. The batch dim is never compared: the C++ backend sets it to max_batch_size first."""
    model_shape = [d.get_length() if d.is_static else -1 for d in shape]
    match = lambda m, c: m == -1 or m == c
    if mbs > 0:
        if len(model_shape) == 0:
            raise ModelConfigRefused(
                "model '" + name + "', tensor '" + n + "': for the model to support batching the shape should have at least 1 dimension"
            )
        full = [mbs] + list(dims)
        ok = len(model_shape) == len(full) and all(
            match(model_shape[i], full[i]) for i in range(1, len(full)) if exact or full[i] != -1
        )
        if not ok:
            raise dims_refused(name, n, model_shape, full, batched=True)
    else:
        ok = len(model_shape) == len(dims) and all(match(m, d) for m, d in zip(model_shape, dims))
        if not ok:
            raise dims_refused(name, n, model_shape, dims, batched=False)


TORCH_DTYPES = {
    "TYPE_BOOL": "bool",
    "TYPE_UINT8": "uint8",
    "TYPE_INT8": "int8",
    "TYPE_INT16": "int16",
    "TYPE_INT32": "int32",
    "TYPE_INT64": "int64",
    "TYPE_FP16": "float16",
    "TYPE_FP32": "float32",
    "TYPE_FP64": "float64",
}


class TorchScriptServing:
    """pytorch_backend (libtorch) for one instance, in Python: inputs named <name>__<index> or after
    forward's arguments, outputs <name>__<index> (the position in what forward returns), the
    instance's GPU when its group asks for one and torch sees it."""

    def __init__(self, cfg, name, path, instance_kind, device_id):
        try:
            import torch
        except ImportError as e:
            raise ModelConfigRefused(
                "the local runtime serves pytorch_libtorch models through PyTorch in the python backend, and torch is "
                "not importable in this model's environment (" + str(e) + "): list torch in a requirements.txt beside "
                "config.pbtxt, or run 'triton-dev setup --with-site-packages' from a Python that has it"
            ) from None
        import torch.utils.dlpack

        self.torch = torch
        self.library = "PyTorch " + torch.__version__
        gpu = instance_kind == "KIND_GPU" and torch.cuda.is_available()
        self.device = torch.device("cuda", device_id) if gpu else torch.device("cpu")
        threads = int_param(cfg, name, "INTRA_OP_THREAD_COUNT", 0)
        if threads > 0:
            torch.set_num_threads(threads)
        inter = int_param(cfg, name, "INTER_OP_THREAD_COUNT", 0)
        if inter > 0:
            try:
                torch.set_num_interop_threads(inter)
            except RuntimeError:
                pass
        self.inference_mode = parse_bool(param(cfg, "INFERENCE_MODE", "true"))
        if parse_bool(param(cfg, "DISABLE_OPTIMIZED_EXECUTION", "false")):
            torch._C._set_graph_executor_optimize(False)
        self.module = torch.jit.load(path, map_location=self.device)
        self.module.eval()
        try:
            args = [a.name for a in self.module.forward.schema.arguments][1:]
        except Exception:
            args = []
        self.input_index = {}
        for io in cfg.get("input", []) or []:
            n = io.get("name", "")
            head, sep, idx = n.rpartition("__")
            if sep and idx.isdigit():
                self.input_index[n] = int(idx)
            elif n in args:
                self.input_index[n] = args.index(n)
            else:
                raise ModelConfigRefused(
                    "input '" + n + "' is neither an argument of the model's forward (" + ", ".join(args)
                    + ") nor follows <name>__<index> naming convention"
                )
        self.output_index = []
        for io in cfg.get("output", []) or []:
            n = io.get("name", "")
            head, sep, idx = n.rpartition("__")
            if not (sep and idx.isdigit()):
                raise ModelConfigRefused("output '" + n + "' does not follow <name>__<index> naming convention")
            self.output_index.append((n, int(idx)))
        # How tensors cross the python backend (P_TORCH_TENSORS, staged by backend-adapter.ts):
        # "numpy" reads the inputs as numpy views of the stub's shared memory and hands back host
        # copies of the outputs; "dlpack_in" takes the inputs through DLPack, where Triton put them
        # (GPU memory with FORCE_CPU_ONLY_INPUT_TENSORS "no" when they come from the GPU: CUDA
        # shared memory, a GPU model before this one in an ensemble); "dlpack" also leaves the
        # outputs where torch wrote them and hands them to Triton through DLPack. "dlpack" is the
        # default on a GPU: on an H100 it took 0.55x the numpy path's time at batch 32 with inputs
        # in CUDA shared memory and was within noise of it over HTTP (bench/gpu/torchscript-adapter.sh).
        mode = (param(cfg, P_TORCH_TENSORS, "") or "dlpack").lower()
        if mode not in TORCH_TENSOR_MODES:
            raise ModelConfigRefused(
                "parameter '" + P_TORCH_TENSORS + "' must be one of " + ", ".join(TORCH_TENSOR_MODES) + ", got '" + mode + "'"
            )
        gpu_inputs = (param(cfg, P_FORCE_CPU_INPUTS, "") or "").lower() == "no"
        if self.device.type != "cuda":
            # On the CPU the outputs must reach the host either way: the numpy path, as it always was.
            mode = "numpy"
        if mode == "numpy" and gpu_inputs:
            # as_numpy cannot read GPU memory, which Triton may hand over once the model lets it.
            mode = "dlpack_in"
        self.tensors = mode
        self.dlpack_in = mode in ("dlpack", "dlpack_in")
        self.dlpack_out = mode == "dlpack"

    def feeds_of(self, request):
        from_dlpack = self.torch.utils.dlpack.from_dlpack
        feeds = {}
        for t in request.inputs():
            try:
                feeds[t.name()] = from_dlpack(t.to_dlpack())
            except Exception:
                # BYTES tensors have no DLPack form: torch refuses them in run as it did before.
                feeds[t.name()] = t.as_numpy()
        return feeds

    def concat(self, parts):
        if all(isinstance(p, self.torch.Tensor) for p in parts):
            return self.torch.cat(parts, dim=0)
        return np.concatenate(parts, axis=0)

    def tensor(self, name, v):
        if not isinstance(v, self.torch.Tensor):
            return pb_utils.Tensor(name, v)
        # Older python backends read no DLPack bool; a host copy is what the numpy path sends anyway.
        if self.dlpack_out and v.dtype != self.torch.bool:
            try:
                # The pb_utils tensor holds the capsule, so torch's memory stays until Triton has copied it.
                return pb_utils.Tensor.from_dlpack(name, self.torch.utils.dlpack.to_dlpack(v.contiguous()))
            except Exception as e:
                # A python backend that refuses the capsule: host copies from now on, as the numpy path sends.
                self.dlpack_out = False
                warn("triton-dev adapter: outputs go through the host from now on; DLPack refused: " + str(e))
        return pb_utils.Tensor(name, v.detach().cpu().numpy())

    def run(self, feeds, names):
        torch = self.torch
        ordered = [None] * len(self.input_index)
        for n, v in feeds.items():
            if n in self.input_index:
                t = v if isinstance(v, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(v))
                ordered[self.input_index[n]] = t.to(self.device, non_blocking=True)
        ctx = torch.inference_mode() if self.inference_mode else torch.no_grad()
        with ctx:
            out = self.module(*ordered)
        if not isinstance(out, (tuple, list)):
            out = [out]
        by_name = {n: out[i] for n, i in self.output_index}
        if not self.dlpack_out:
            return [by_name[n].detach().cpu().numpy() for n in names]
        outs = [by_name[n].detach() for n in names]
        if self.device.type == "cuda":
            # A DLPack capsule carries no stream: pb_utils would read outputs torch has not finished.
            torch.cuda.current_stream(self.device).synchronize()
        return outs


SERVINGS = {"onnxruntime": OnnxRuntimeServing, "openvino": OpenVinoServing, "pytorch": TorchScriptServing}


class AdapterProfile:
    """With the model parameter TRITON_DEV_ADAPTER_PROFILE "yes" (bench/onnx-adapter.mjs sets it):
    the medians of each execute, of the runtime's run within it, and of the rest (the adapter's own
    Python: reading the inputs, batching, building the responses), logged every 100 executes. Medians
    inside the stub hold still where a busy machine's end-to-end times do not."""

    EVERY = 100

    def __init__(self, name, serving):
        self.name = name
        self.samples = []
        self.in_run = 0.0
        run = serving.run

        def timed(feeds, names):
            start = time.perf_counter()
            try:
                return run(feeds, names)
            finally:
                self.in_run += time.perf_counter() - start

        serving.run = timed

    def record(self, total):
        self.samples.append((total, self.in_run, total - self.in_run))
        self.in_run = 0.0
        if len(self.samples) >= self.EVERY:
            total, run, own = (np.median(np.array(self.samples), axis=0) * 1e6).tolist()
            info(
                "triton-dev adapter profile: model '%s', %d executes, median execute %.1f us, the runtime's run %.1f us, "
                "the adapter's own %.1f us" % (self.name, len(self.samples), total, run, own)
            )
            self.samples = []


class TritonPythonModel:
    def initialize(self, args):
        cfg = json.loads(args["model_config"])
        self.name = args["model_name"]
        backend = param(cfg, P_BACKEND)
        path = os.path.join(args["model_repository"], args["model_version"], param(cfg, P_FILE))
        if backend == "onnxruntime" and os.path.isdir(path):
            path = os.path.join(path, "model.onnx")
        if not os.path.exists(path):
            raise ModelConfigRefused("unable to find '" + path + "' for model instance '" + args["model_instance_name"] + "'")
        kind = args.get("model_instance_kind", "CPU")
        kind = "KIND_" + kind if not kind.startswith("KIND_") else kind
        device = int(args.get("model_instance_device_id", "0") or 0)
        self.serving = SERVINGS[backend](cfg, self.name, path, kind, device)
        # TorchScript may take and give tensors through DLPack; the other runtimes read numpy.
        self.dlpack_in = getattr(self.serving, "dlpack_in", False)
        self.dlpack_out = getattr(self.serving, "dlpack_out", False)
        self.max_batch_size = int(cfg.get("max_batch_size", 0) or 0)
        self.output_names = [o["name"] for o in cfg.get("output", []) or []]
        self.output_types = {o["name"]: NUMPY.get(o.get("data_type"), None) for o in cfg.get("output", []) or []}
        # Only string outputs need converting; the rest go to Triton as the runtime returned them.
        self.string_outputs = any(o.get("data_type") == "TYPE_STRING" for o in cfg.get("output", []) or [])
        profiled = (param(cfg, "TRITON_DEV_ADAPTER_PROFILE", "") or "").lower() == "yes"
        self.profile = AdapterProfile(self.name, self.serving) if profiled else None

    def execute(self, requests):
        if self.profile is None:
            return self.execute_requests(requests)
        start = time.perf_counter()
        responses = self.execute_requests(requests)
        self.profile.record(time.perf_counter() - start)
        return responses

    def execute_requests(self, requests):
        # Triton's scheduler already gathered these requests; a batching model runs them as one
        # batch (the C++ backends do), then each request gets its rows back.
        if self.max_batch_size > 0 and len(requests) > 1:
            try:
                return self.execute_batched(requests)
            except _ShapesDiffer:
                pass
        return [self.execute_one(r) for r in requests]

    def feeds_of(self, request):
        if self.dlpack_in:
            return self.serving.feeds_of(request)
        return {t.name(): t.as_numpy() for t in request.inputs()}

    def respond(self, outputs):
        if self.dlpack_out:
            return pb_utils.InferenceResponse(output_tensors=[self.serving.tensor(n, v) for n, v in zip(self.output_names, outputs)])
        if not self.string_outputs:
            return pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor(n, v) for n, v in zip(self.output_names, outputs)])
        tensors = []
        for n, v in zip(self.output_names, outputs):
            if v.dtype.kind == "U":
                v = np.array([s.encode("utf-8") for s in v.ravel()], dtype=object).reshape(v.shape)
            elif v.dtype == np.object_:
                v = np.array([s.encode("utf-8") if isinstance(s, str) else s for s in v.ravel()], dtype=object).reshape(v.shape)
            tensors.append(pb_utils.Tensor(n, v))
        return pb_utils.InferenceResponse(output_tensors=tensors)

    def execute_one(self, request):
        try:
            return self.respond(self.serving.run(self.feeds_of(request), self.output_names))
        except Exception as e:  # the runtime's own words reach the client
            return pb_utils.InferenceResponse(error=pb_utils.TritonError(str(e)))

    def execute_batched(self, requests):
        feeds = [self.feeds_of(r) for r in requests]
        names = list(feeds[0])
        for f in feeds[1:]:
            if list(f) != names or any(f[k].shape[1:] != feeds[0][k].shape[1:] for k in names):
                raise _ShapesDiffer()
        sizes = [next(iter(f.values())).shape[0] if f else 0 for f in feeds]
        concat = self.serving.concat if self.dlpack_in else (lambda parts: np.concatenate(parts, axis=0))
        merged = {k: concat([f[k] for f in feeds]) for k in names}
        try:
            outputs = self.serving.run(merged, self.output_names)
        except Exception as e:
            return [pb_utils.InferenceResponse(error=pb_utils.TritonError(str(e))) for _ in requests]
        total = sum(sizes)
        responses = []
        start = 0
        for s in sizes:
            part = [o[start : start + s] if o.ndim > 0 and o.shape[0] == total else o for o in outputs]
            responses.append(self.respond(part))
            start += s
        return responses


class _ShapesDiffer(Exception):
    pass
`;
