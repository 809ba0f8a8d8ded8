/**
 * "Lint agrees with Triton" for models with real model files: configs against ONNX models written
 * by the onnx package (make-onnx-models.py), OpenVINO IR XML and TorchScript archives, with what
 * lint must say and what Triton says. Neither the local runtime nor the docker runtime's test image
 * (both tritonserver 2.51 from the nvidia-pytriton wheel: python backend only) has the onnxruntime,
 * openvino or pytorch backend, so no Triton here can load these: every verdict below is derived
 * from the backend's rules (`derived` names the rule), not measured, and Triton's words are the
 * backend's error text. What lint reads of the ONNX files was checked against onnxruntime 1.32's
 * InferenceSession.get_inputs()/get_outputs() on the same files (onnxruntime pip-installed apart,
 * by hand): initializers listed as inputs are left out, dim_params are variable, a tensor with no
 * shape comes back as shape [] like a scalar, and types.onnx is refused whole (COMPLEX64).
 */

export interface ModelFileCase {
  model: string;
  /** config.pbtxt's text (its name line is added). */
  config: string;
  /** The version folder's files: a name from make-onnx-models.py for ONNX, or the text. */
  files: Record<string, { onnx: string } | string>;
  /** The finding by which lint says the model will not load, or "accepted". */
  lint: string;
  /** A warning lint must give on an accepted model ("model-file-not-checked"). */
  warning?: string;
  /** What the backend answers, as its source writes it; absent for accepted cases. */
  triton?: string;
  /** The rule the verdict is derived from. */
  derived: string;
  /** LintOptions.autoComplete; undefined = Triton's default, assumed. */
  autoComplete?: boolean;
}

const ORT = "onnxruntime_backend src/onnxruntime.cc";
const io = (name: string, type: string, dims: string) => `{ name: "${name}" data_type: ${type} dims: ${dims} }`;
const ADD_IO = `input [ ${io("INPUT0", "TYPE_FP32", "[ 4 ]")} ]\noutput [ ${io("OUTPUT0", "TYPE_FP32", "[ 4 ]")} ]\n`;
const onnx = (file = "add.onnx") => ({ "model.onnx": { onnx: file } });

/** An OpenVINO IR v11: INPUT0 f32 [?,4] -> Relu -> OUTPUT0. */
export const OPENVINO_XML = `<?xml version="1.0"?>
<net name="relu" version="11">
  <layers>
    <layer id="0" name="INPUT0" type="Parameter" version="opset1">
      <data shape="?,4" element_type="f32" />
      <output>
        <port id="0" precision="FP32" names="INPUT0"><dim>-1</dim><dim>4</dim></port>
      </output>
    </layer>
    <layer id="1" name="relu" type="Relu" version="opset1">
      <input><port id="0" precision="FP32"><dim>-1</dim><dim>4</dim></port></input>
      <output><port id="1" precision="FP32" names="OUTPUT0"><dim>-1</dim><dim>4</dim></port></output>
    </layer>
    <layer id="2" name="OUTPUT0/sink_port_0" type="Result" version="opset1">
      <input><port id="0" precision="FP32"><dim>-1</dim><dim>4</dim></port></input>
    </layer>
  </layers>
  <edges>
    <edge from-layer="0" from-port="0" to-layer="1" to-port="0" />
    <edge from-layer="1" from-port="1" to-layer="2" to-port="0" />
  </edges>
</net>
`;

/** An OpenVINO IR v11: INPUT0 and INPUT1 f32 [?,4] -> Add -> OUTPUT0. */
export const OPENVINO_ADD2_XML = `<?xml version="1.0"?>
<net name="add2" version="11">
  <layers>
    <layer id="0" name="INPUT0" type="Parameter" version="opset1">
      <data shape="?,4" element_type="f32" />
      <output>
        <port id="0" precision="FP32" names="INPUT0"><dim>-1</dim><dim>4</dim></port>
      </output>
    </layer>
    <layer id="1" name="INPUT1" type="Parameter" version="opset1">
      <data shape="?,4" element_type="f32" />
      <output>
        <port id="0" precision="FP32" names="INPUT1"><dim>-1</dim><dim>4</dim></port>
      </output>
    </layer>
    <layer id="2" name="add" type="Add" version="opset1">
      <input>
        <port id="0" precision="FP32"><dim>-1</dim><dim>4</dim></port>
        <port id="1" precision="FP32"><dim>-1</dim><dim>4</dim></port>
      </input>
      <output><port id="2" precision="FP32" names="OUTPUT0"><dim>-1</dim><dim>4</dim></port></output>
    </layer>
    <layer id="3" name="OUTPUT0/sink_port_0" type="Result" version="opset1">
      <input><port id="0" precision="FP32"><dim>-1</dim><dim>4</dim></port></input>
    </layer>
  </layers>
  <edges>
    <edge from-layer="0" from-port="0" to-layer="2" to-port="0" />
    <edge from-layer="1" from-port="0" to-layer="2" to-port="1" />
    <edge from-layer="2" from-port="2" to-layer="3" to-port="0" />
  </edges>
</net>
`;

export const MODEL_FILE_CASES: ModelFileCase[] = [
  {
    model: "onnx_matches",
    config: `platform: "onnxruntime_onnx"\nmax_batch_size: 8\n${ADD_IO}`,
    files: onnx(),
    lint: "accepted",
    derived: `${ORT} ValidateInputs/ValidateOutputs: names, types and dims after the batch dimension match`,
  },
  {
    model: "onnx_wrong_input_name",
    config: `platform: "onnxruntime_onnx"\nmax_batch_size: 8\ninput [ ${io("INPUT_0", "TYPE_FP32", "[ 4 ]")} ]\noutput [ ${io("OUTPUT0", "TYPE_FP32", "[ 4 ]")} ]\n`,
    files: onnx(),
    lint: "model-io-unknown",
    triton: "unexpected inference input 'INPUT_0', allowed inputs are: INPUT0",
    derived: `${ORT} ValidateInputs`,
  },
  {
    model: "onnx_initializer_is_not_an_input",
    config: `platform: "onnxruntime_onnx"\nmax_batch_size: 8\ninput [ ${io("INPUT0", "TYPE_FP32", "[ 4 ]")}, ${io("W", "TYPE_FP32", "[ 4 ]")} ]\noutput [ ${io("OUTPUT0", "TYPE_FP32", "[ 4 ]")} ]\n`,
    files: onnx(),
    lint: "model-io-count",
    triton: "configuration expects 2 inputs, model provides 1",
    derived: `${ORT} ValidateInputs counts the session's inputs first (onnxruntime's Graph::GetInputs leaves initializers out)`,
  },
  {
    model: "onnx_optional_initializer",
    config: `platform: "onnxruntime_onnx"\nmax_batch_size: 0\ninput [ ${io("INPUT0", "TYPE_FP32", "[ -1, 4 ]")}, { name: "W" data_type: TYPE_FP32 dims: [ 4 ] optional: true } ]\noutput [ ${io("OUTPUT0", "TYPE_FP32", "[ -1, 4 ]")} ]\n`,
    files: onnx(),
    lint: "accepted",
    derived: `${ORT}: an optional input is not counted, and an overridable initializer is an allowed input name`,
  },
  {
    model: "onnx_fewer_inputs",
    config: `platform: "onnxruntime_onnx"\nmax_batch_size: 8\n${ADD_IO}`,
    files: onnx("add2.onnx"),
    lint: "model-io-count",
    triton: "unable to load model 'onnx_fewer_inputs', configuration expects 1 inputs, model provides 2",
    derived: `${ORT} ModelInstanceState (expected_input_cnt) and ValidateInputs`,
  },
  {
    model: "onnx_fewer_inputs_optional",
    config: `platform: "onnxruntime_onnx"\nmax_batch_size: 0\ninput [ ${io("INPUT0", "TYPE_FP32", "[ -1, 4 ]")}, { name: "INPUT1" data_type: TYPE_FP32 dims: [ -1, 4 ] optional: true } ]\noutput [ ${io("OUTPUT0", "TYPE_FP32", "[ -1, 4 ]")} ]\n`,
    files: onnx("add2.onnx"),
    lint: "model-io-count",
    triton: "configuration expects 1 inputs, model provides 2",
    derived: `${ORT}: optional inputs are left out of the count (taken for overridable initializers), so a real input marked optional is one short`,
  },
  {
    model: "onnx_batch_input_counted",
    config: `platform: "onnxruntime_onnx"\nmax_batch_size: 8\n${ADD_IO}batch_input [ { kind: BATCH_ELEMENT_COUNT target_name: "INPUT1" data_type: TYPE_FP32 source_input: "INPUT0" } ]\n`,
    files: onnx("add2.onnx"),
    lint: "accepted",
    derived: `${ORT}: each batch_input counts as an input`,
  },
  {
    model: "onnx_all_inputs_completed",
    config: `platform: "onnxruntime_onnx"\nmax_batch_size: 8\noutput [ ${io("OUTPUT0", "TYPE_FP32", "[ 4 ]")} ]\n`,
    files: onnx("add2.onnx"),
    lint: "accepted",
    derived: `${ORT} AutoCompleteConfig: no inputs listed, so all of the model's are`,
  },
  {
    model: "onnx_wrong_output_name",
    config: `platform: "onnxruntime_onnx"\nmax_batch_size: 8\ninput [ ${io("INPUT0", "TYPE_FP32", "[ 4 ]")} ]\noutput [ ${io("OUT", "TYPE_FP32", "[ 4 ]")} ]\n`,
    files: onnx(),
    lint: "model-io-unknown",
    triton: "unexpected inference output 'OUT', allowed outputs are: OUTPUT0",
    derived: `${ORT} ValidateOutputs`,
  },
  {
    model: "onnx_wrong_type",
    config: `platform: "onnxruntime_onnx"\nmax_batch_size: 8\ninput [ ${io("INPUT0", "TYPE_INT32", "[ 4 ]")} ]\noutput [ ${io("OUTPUT0", "TYPE_FP32", "[ 4 ]")} ]\n`,
    files: onnx(),
    lint: "model-io-data-type",
    triton: "unexpected datatype TYPE_INT32 for inference input 'INPUT0', expecting TYPE_FP32",
    derived: `${ORT} ValidateInputs`,
  },
  {
    model: "onnx_wrong_dims",
    config: `platform: "onnxruntime_onnx"\nmax_batch_size: 8\ninput [ ${io("INPUT0", "TYPE_FP32", "[ 3 ]")} ]\noutput [ ${io("OUTPUT0", "TYPE_FP32", "[ 4 ]")} ]\n`,
    files: onnx(),
    lint: "model-io-dims",
    triton:
      "model 'onnx_wrong_dims', tensor 'INPUT0': the model expects 2 dimensions (shape [-1,4]) but the model configuration specifies 2 dimensions (an initial batch dimension because max_batch_size > 0 followed by the explicit tensor shape, making complete shape [-1,3])",
    derived: `${ORT} CompareDimsSupported (onnxruntime_utils.cc)`,
  },
  {
    model: "onnx_batch_dim_written",
    config: `platform: "onnxruntime_onnx"\nmax_batch_size: 8\ninput [ ${io("INPUT0", "TYPE_FP32", "[ -1, 4 ]")} ]\noutput [ ${io("OUTPUT0", "TYPE_FP32", "[ -1, 4 ]")} ]\n`,
    files: onnx(),
    lint: "model-io-dims",
    triton: "the model expects 2 dimensions (shape [-1,4]) but the model configuration specifies 3 dimensions",
    derived: `${ORT} CompareDimsSupported: dims exclude the batch dimension when max_batch_size > 0`,
  },
  {
    model: "onnx_no_batch_dim",
    config: `platform: "onnxruntime_onnx"\nmax_batch_size: 8\ninput [ ${io("INPUT0", "TYPE_FP32", "[ 4 ]")} ]\noutput [ ${io("OUTPUT0", "TYPE_FP32", "[ 4 ]")} ]\n`,
    files: onnx("fixed.onnx"),
    lint: "model-io-batch-dim",
    triton:
      "for the model to support batching the shape should have at least 1 dimension and the first dimension must be -1",
    derived: `${ORT} CompareDimsSupported with supports_batching`,
  },
  {
    model: "onnx_unshaped_batched",
    config: `platform: "onnxruntime_onnx"\nmax_batch_size: 8\ninput [ ${io("unshaped", "TYPE_FP32", "[ 4 ]")} ]\noutput [ ${io("unshaped_out", "TYPE_FP32", "[ 4 ]")} ]\n`,
    files: onnx("shapes.onnx"),
    lint: "model-io-batch-dim",
    triton:
      "for the model to support batching the shape should have at least 1 dimension and the first dimension must be -1",
    derived: `${ORT} CompareDimsSupported: onnxruntime 1.32 gives a tensor of unknown rank the shape [] (measured)`,
  },
  {
    model: "onnx_fixed_full_shape",
    config: `platform: "onnxruntime_onnx"\nmax_batch_size: 0\ninput [ ${io("INPUT0", "TYPE_FP32", "[ 2, 4 ]")} ]\noutput [ ${io("OUTPUT0", "TYPE_FP32", "[ 2, 4 ]")} ]\n`,
    files: onnx("fixed.onnx"),
    lint: "accepted",
    derived: `${ORT} CompareDimsSupported without batching: the full shape`,
  },
  {
    model: "onnx_completed",
    config: `platform: "onnxruntime_onnx"\n`,
    files: onnx(),
    lint: "accepted",
    derived: `${ORT} AutoCompleteConfig: inputs, outputs and max_batch_size (default-max-batch-size 4) from the model`,
  },
  {
    model: "onnx_partial_completed",
    config: `platform: "onnxruntime_onnx"\nmax_batch_size: 8\ninput [ { name: "INPUT0" } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_FP32 } ]\n`,
    files: onnx(),
    lint: "io-data-type-missing",
    triton: "model input 'INPUT0' must specify 'data_type'",
    derived: `${ORT} AutoCompleteConfig does nothing once inputs and outputs are listed ("inputs and outputs already specified"), so core's ValidateIOShape meets the missing fields`,
  },
  {
    model: "onnx_outputs_listed_inputs_completed",
    config: `platform: "onnxruntime_onnx"\noutput [ ${io("OUTPUT0", "TYPE_FP32", "[ 4 ]")} ]\n`,
    files: onnx(),
    lint: "accepted",
    derived: `${ORT} AutoCompleteConfig with no inputs listed: max_batch_size 4 and the inputs from the model`,
  },
  {
    model: "onnx_listed_without_max_batch_size",
    config: `platform: "onnxruntime_onnx"\n${ADD_IO}`,
    files: onnx(),
    lint: "model-io-dims",
    triton:
      "the model expects 2 dimensions (shape [-1,4]) but the model configuration specifies 1 dimensions (shape [4])",
    derived: `${ORT} AutoCompleteConfig does nothing once inputs and outputs are listed, max_batch_size included: it stays 0, so dims are the full shape`,
  },
  {
    model: "onnx_partial_auto_complete_off",
    config: `platform: "onnxruntime_onnx"\nmax_batch_size: 8\ninput [ { name: "INPUT0" } ]\noutput [ ${io("OUTPUT0", "TYPE_FP32", "[ 4 ]")} ]\n`,
    files: onnx(),
    autoComplete: false,
    lint: "io-data-type-missing",
    triton: "model input 'INPUT0' must specify 'data_type'",
    derived: "core model_config_utils.cc ValidateIOShape, with --disable-auto-complete-config",
  },
  {
    model: "onnx_unservable_type",
    config: `platform: "onnxruntime_onnx"\nmax_batch_size: 0\ninput [ ${io("seq", "TYPE_FP32", "[ -1 ]")} ]\noutput [ ${io("length", "TYPE_INT64", "[ 1 ]")} ]\n`,
    files: onnx("sequence.onnx"),
    lint: "model-io-data-type",
    triton: "unsupported datatype",
    derived: `${ORT} ValidateInputs: a sequence input has no Triton data type`,
  },
  {
    model: "onnx_truncated",
    config: `platform: "onnxruntime_onnx"\nmax_batch_size: 8\n${ADD_IO}`,
    files: { "model.onnx": "\x3a\x80\x80\x80\x80\x10" },
    lint: "onnx-invalid",
    triton: "Protobuf parsing failed",
    derived: "onnxruntime InferenceSession on a file that is not a ModelProto",
  },
  {
    model: "onnx_external_data_missing",
    config: `platform: "onnxruntime_onnx"\nmax_batch_size: 8\n${ADD_IO}`,
    files: onnx("external.onnx"),
    lint: "onnx-external-data-missing",
    triton: "External initializer: W ... cannot open file",
    derived: "onnxruntime loading an initializer whose external data file is absent (external.bin is left out here)",
  },
  {
    model: "openvino_matches",
    config: `backend: "openvino"\nmax_batch_size: 8\n${ADD_IO}`,
    files: { "model.xml": OPENVINO_XML, "model.bin": "" },
    lint: "accepted",
    derived: "openvino_backend ValidateInputs/ValidateOutputs",
  },
  {
    model: "openvino_fewer_inputs",
    config: `backend: "openvino"\nmax_batch_size: 8\n${ADD_IO}`,
    files: { "model.xml": OPENVINO_ADD2_XML, "model.bin": "" },
    lint: "model-io-count",
    triton: "unable to load model 'openvino_fewer_inputs', configuration expects 1 inputs, model provides 2",
    derived: "openvino_backend ValidateConfigureModel/ValidateInputs: every listed input counted",
  },
  {
    model: "openvino_inputs_completed",
    config: `backend: "openvino"\nmax_batch_size: 8\noutput [ ${io("OUTPUT0", "TYPE_FP32", "[ 4 ]")} ]\n`,
    files: { "model.xml": OPENVINO_ADD2_XML, "model.bin": "" },
    lint: "accepted",
    derived: "openvino_backend AutoCompleteInputOrOutput: no inputs listed, so all of the model's are",
  },
  {
    model: "openvino_wrong_name",
    config: `backend: "openvino"\nmax_batch_size: 8\ninput [ ${io("input", "TYPE_FP32", "[ 4 ]")} ]\noutput [ ${io("OUTPUT0", "TYPE_FP32", "[ 4 ]")} ]\n`,
    files: { "model.xml": OPENVINO_XML, "model.bin": "" },
    lint: "model-io-unknown",
    triton: "unexpected inference input 'input', allowed inputs are: INPUT0",
    derived: "openvino_backend ValidateInputs",
  },
  {
    model: "openvino_wrong_type",
    config: `backend: "openvino"\nmax_batch_size: 8\ninput [ ${io("INPUT0", "TYPE_FP16", "[ 4 ]")} ]\noutput [ ${io("OUTPUT0", "TYPE_FP32", "[ 4 ]")} ]\n`,
    files: { "model.xml": OPENVINO_XML, "model.bin": "" },
    lint: "model-io-data-type",
    triton: "unexpected datatype TYPE_FP16 for inference input 'INPUT0', expecting TYPE_FP32",
    derived: "openvino_backend ValidateInputs",
  },
  {
    model: "torchscript_output_name",
    config: `platform: "pytorch_libtorch"\nmax_batch_size: 8\ninput [ ${io("INPUT__0", "TYPE_FP32", "[ 4 ]")} ]\noutput [ ${io("OUTPUT0", "TYPE_FP32", "[ 4 ]")} ]\n`,
    files: { "model.pt": "PK" },
    lint: "torchscript-output-name",
    triton: "output 'OUTPUT0' does not follow <name>__<index> naming convention",
    derived: "pytorch_backend libtorch.cc ValidateOutputs",
  },
  {
    model: "torchscript_named",
    config: `platform: "pytorch_libtorch"\nmax_batch_size: 8\ninput [ ${io("INPUT__0", "TYPE_FP32", "[ 4 ]")} ]\noutput [ ${io("OUTPUT__0", "TYPE_FP32", "[ 4 ]")} ]\n`,
    files: { "model.pt": "PK" },
    lint: "accepted",
    warning: "model-file-not-checked",
    derived: "pytorch_backend libtorch.cc: <name>__<index> names; types and shapes are not in the file",
  },
  // No platform or backend: the backend Triton infers from the version folder's file (core's
  // AutoCompleteBackendFields) decides which of the backend's rules apply.
  {
    model: "onnx_inferred_wrong_name",
    config: `max_batch_size: 8\ninput [ ${io("INPUT_0", "TYPE_FP32", "[ 4 ]")} ]\noutput [ ${io("OUTPUT0", "TYPE_FP32", "[ 4 ]")} ]\n`,
    files: onnx(),
    lint: "model-io-unknown",
    triton: "unexpected inference input 'INPUT_0', allowed inputs are: INPUT0",
    derived: `${ORT} ValidateInputs, on the onnxruntime backend core infers from 1/model.onnx`,
  },
  {
    model: "onnx_inferred_from_filename",
    config: `default_model_filename: "model.onnx"\nmax_batch_size: 8\n${ADD_IO}`,
    files: onnx(),
    lint: "accepted",
    warning: "backend-inferred",
    derived: `core infers onnxruntime from default_model_filename 'model.onnx'; ${ORT} ValidateInputs/ValidateOutputs`,
  },
  {
    model: "onnx_inferred_folder",
    config: `max_batch_size: 8\n${ADD_IO}`,
    files: { "model.onnx/model.onnx": { onnx: "add.onnx" } },
    lint: "accepted",
    warning: "backend-inferred",
    derived: `core takes a model.onnx folder for onnxruntime (large models); ${ORT} loads model.onnx inside it`,
  },
  {
    model: "torchscript_inferred_output_name",
    config: `max_batch_size: 8\ninput [ ${io("INPUT__0", "TYPE_FP32", "[ 4 ]")} ]\noutput [ ${io("OUTPUT0", "TYPE_FP32", "[ 4 ]")} ]\n`,
    files: { "model.pt": "PK" },
    lint: "torchscript-output-name",
    triton: "output 'OUTPUT0' does not follow <name>__<index> naming convention",
    derived: "pytorch_backend libtorch.cc ValidateOutputs, on the pytorch backend core infers from 1/model.pt",
  },
  {
    model: "tensorrt_inferred_profile",
    config: `max_batch_size: 8\n${ADD_IO}instance_group [ { kind: KIND_GPU profile: [ "0" ] } ]\n`,
    files: { "model.plan": "plan" },
    lint: "accepted",
    warning: "model-file-not-checked",
    derived: "core ValidateInstanceGroup allows profile on platform tensorrt_plan, which it infers from 1/model.plan",
  },
  {
    model: "tensorrt_backend_shape_tensor",
    config: `backend: "tensorrt"\nmax_batch_size: 8\ninput [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 2 ] is_shape_tensor: true } ]\noutput [ ${io("OUTPUT0", "TYPE_FP32", "[ 4 ]")} ]\n`,
    files: { "model.plan": "plan" },
    lint: "accepted",
    warning: "model-file-not-checked",
    derived: "core fills in platform tensorrt_plan for backend 'tensorrt', where shape tensors are allowed",
  },
  {
    model: "tensorrt_incomplete_completed",
    config: `platform: "tensorrt_plan"\nmax_batch_size: 8\ninput [ { name: "INPUT0" } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_FP32 } ]\n`,
    files: { "model.plan": "plan" },
    lint: "accepted",
    warning: "model-file-not-checked",
    derived:
      "tensorrt_backend model_state.cc: with auto-complete on and a GPU instance, AutoCompleteConfig's FixIO fills a listed tensor's data_type and dims from the engine before core checks them",
  },
  {
    model: "tensorrt_incomplete_auto_complete_off",
    config: `platform: "tensorrt_plan"\nmax_batch_size: 8\ninput [ { name: "INPUT0" } ]\noutput [ ${io("OUTPUT0", "TYPE_FP32", "[ 4 ]")} ]\n`,
    files: { "model.plan": "plan" },
    autoComplete: false,
    lint: "io-data-type-missing",
    triton: "model input 'INPUT0' must specify 'data_type'",
    derived: "core model_config_utils.cc ValidateIOShape, with --disable-auto-complete-config (nothing is filled in)",
  },
  {
    model: "tensorrt_incomplete_cpu",
    config: `platform: "tensorrt_plan"\nmax_batch_size: 8\ninput [ { name: "INPUT0" } ]\noutput [ ${io("OUTPUT0", "TYPE_FP32", "[ 4 ]")} ]\ninstance_group [ { kind: KIND_CPU } ]\n`,
    files: { "model.plan": "plan" },
    lint: "io-data-type-missing",
    triton: "model input 'INPUT0' must specify 'data_type'",
    derived:
      "tensorrt_backend ModelState::Create skips AutoCompleteConfig without a KIND_GPU instance group, so nothing is filled in",
  },
  {
    model: "tensorrt_not_checked",
    config: `platform: "tensorrt_plan"\nmax_batch_size: 8\n${ADD_IO}`,
    files: { "model.plan": "plan" },
    lint: "accepted",
    warning: "model-file-not-checked",
    derived: "a TensorRT plan is read only by TensorRT: lint says it did not check it",
  },
];
