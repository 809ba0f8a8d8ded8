import fsp from "node:fs/promises";
import path from "node:path";
import { withExecutionEnv } from "../../envs/execution-env.js";
import { REQUIREMENTS_FILE } from "../../envs/requirements.js";
import type { ModelEnvironments } from "../../envs/model-environments.js";
import { UserError } from "../../errors.js";
import { findTopLevelField, removeField, setField } from "../../repo/config-edit.js";
import type { ModelConfigJson, ModelInputJson, ModelOutputJson } from "../../repo/model-config.js";
import { ORIGINALS_DIR } from "../../repo/model-files.js";
import { backendCompletion } from "../../repo/model-io/completion.js";
import { ADAPTER_MODEL_PY } from "./adapter-source.js";

/** What the adapter could not do for a model (not the environment's build: that is an EnvironmentError). */
export class AdapterError extends UserError {
  override name = "AdapterError";
}

/** The adapter's file in each staged version folder; the staged config names it as default_model_filename. */
export const ADAPTER_FILE = "triton_dev_adapter.py";
/** The staged config's parameters the adapter reads. */
export const ADAPTED_BACKEND_PARAM = "TRITON_DEV_ADAPTED_BACKEND";
export const ADAPTED_FILE_PARAM = "TRITON_DEV_ADAPTED_FILE";
/**
 * How the TorchScript adapter passes tensors: "numpy" (numpy views in, host copies out), "dlpack_in"
 * (inputs through DLPack, where Triton put them), "dlpack" (outputs too stay where torch wrote them).
 */
export const TORCH_TENSORS_PARAM = "TRITON_DEV_TORCH_TENSORS";
/**
 * The python backend's own parameter (python_backend README, "Input Tensor Device Placement"):
 * "no" lets Triton hand inputs over in GPU memory when they are there already (CUDA shared memory,
 * a GPU model before this one in an ensemble) instead of copying them to the host first.
 */
export const FORCE_CPU_ONLY_INPUTS_PARAM = "FORCE_CPU_ONLY_INPUT_TENSORS";

/**
 * The parameter the staged config adds for where a model's tensors live. The adapter's TorchScript
 * path on a GPU instance is DLPack (measured on an H100 by bench/gpu/torchscript-adapter.sh: 0.55x
 * the host round trip's time at batch 32 with inputs in CUDA shared memory, within noise of it over
 * HTTP), so a model that may have a GPU instance (a KIND_GPU group, or KIND_AUTO or no
 * instance_group, which Triton makes GPU instances wherever it sees a GPU) gets
 * `FORCE_CPU_ONLY_INPUT_TENSORS: "no"`: inputs already in GPU memory reach it without a copy to the
 * host. Not when the config asks for the host round trip (`TRITON_DEV_TORCH_TENSORS: "numpy"`) or
 * sets the python backend's parameter itself. Other backends' adapters read numpy on the CPU: none.
 */
export function tensorPlacementParameters(backend: string, json: ModelConfigJson): Array<[string, string]> {
  if (backend !== "pytorch") return [];
  const own = json.parameters ?? {};
  const asked = own[TORCH_TENSORS_PARAM]?.string_value?.toLowerCase();
  // DLPack is the adapter's default on a GPU instance (adapter-source.ts); only "numpy" keeps the host round trip.
  if (asked === "numpy") return [];
  const groups = json.instance_group ?? [];
  const mayUseGpu =
    groups.length === 0 || groups.some((g) => g.kind === undefined || g.kind === "KIND_GPU" || g.kind === "KIND_AUTO");
  if (!mayUseGpu || FORCE_CPU_ONLY_INPUTS_PARAM in own) return [];
  return [[FORCE_CPU_ONLY_INPUTS_PARAM, "no"]];
}

/** Where in a snapshot the runtime library's requirement is written (a dot folder: never walked, hashed or served). */
const RUNTIME_REQUIREMENTS = path.join(ORIGINALS_DIR, ".runtime", "requirements.txt");
/** Where a snapshot says how it is served (servedAs), for `status` and the dashboard, from any process. */
const SERVED_AS = path.join(ORIGINALS_DIR, ".runtime", "served-as");

/** How the model served from snapshot `dir` is served, when an adapter serves it. */
export async function servedAsOf(dir: string): Promise<string | undefined> {
  const text = await fsp.readFile(path.join(dir, SERVED_AS), "utf8").catch(() => undefined);
  return text?.trim() || undefined;
}

/** A backend served through the python backend: its runtime library and how that is said. */
export interface AdaptedBackend {
  /** "ONNX Runtime". */
  library: string;
  /** What pip installs into the model's environment, pinned (`onnxruntime==1.20.1`). */
  requirement: string;
  /** "served through ONNX Runtime 1.20 in the python backend (local runtime)". */
  servedAs: string;
}

export interface BackendAdapterOptions {
  /** The backends served this way (the runtime's facts, RuntimeFacts.adaptedBackends). */
  backends: Readonly<Record<string, AdaptedBackend>>;
  /** Builds the model's environment with the runtime library. */
  environments: ModelEnvironments | undefined;
  /** Whether the run's Triton completes configs: the backend would complete them then, and so does the adapter. */
  autoComplete: () => boolean;
}

export interface AdaptedModel {
  backend: string;
  /** "served through ONNX Runtime 1.20 in the python backend (local runtime)". */
  servedAs: string;
}

/** A tensor as the backend's AutoCompleteIO writes it: a scalar gets dims [1], and reshape [] when batching. */
function tensorText(io: ModelInputJson | ModelOutputJson, batching: boolean): string {
  const dims = io.dims ?? [];
  const shown = dims.length === 0 ? [1] : dims;
  const reshape = dims.length === 0 && batching ? " reshape: { shape: [ ] }" : "";
  return `{ name: ${JSON.stringify(io.name ?? "")} data_type: ${io.data_type ?? "TYPE_INVALID"} dims: [ ${shown.join(", ")} ]${reshape} }`;
}

function parameter(key: string, value: string): string {
  return `parameters: { key: ${JSON.stringify(key)} value: { string_value: ${JSON.stringify(value)} } }`;
}

/**
 * Makes a staged model that a C++ backend would serve (onnxruntime, openvino) servable by the
 * python backend: the backend's runtime library comes into the model's environment (pinned, from
 * PyPI, like a requirements.txt), each version folder gets the adapter model.py, and the staged
 * config.pbtxt names the python backend, the adapter, the model file and what the backend's
 * auto-complete would have filled in (the same completion lint judges the model by). The user's
 * files are never touched: the snapshot keeps their config in ORIGINALS_DIR, so it still hashes as
 * their folder. Undefined when the model is not one of these backends'.
 */
export async function adaptStaged(
  model: string,
  dir: string,
  userDir: string,
  o: BackendAdapterOptions,
  onBuild?: (what: string) => void,
): Promise<AdaptedModel | undefined> {
  const completion = await backendCompletion(dir, model, o.autoComplete());
  if (!completion) return undefined;
  const adapted = o.backends[completion.backend];
  if (!adapted) return undefined;
  if (!o.environments) {
    throw new AdapterError(
      `${model}: the ${completion.backend} backend is served through the python backend, but this run builds no environments`,
      {
        hint: "Report this as a bug: the runtime that adapts a backend must build environments.",
      },
    );
  }
  // The runtime library, pinned, and what the model's own requirements.txt adds (a library's extensions, torch).
  const own = await fsp.readFile(path.join(dir, REQUIREMENTS_FILE), "utf8").catch(() => "");
  const lines = [adapted.requirement, own.trim()].filter(Boolean);
  let envDir: string | undefined;
  if (lines.length > 0) {
    const requirements = path.join(dir, RUNTIME_REQUIREMENTS);
    await fsp.mkdir(path.dirname(requirements), { recursive: true });
    await fsp.writeFile(requirements, `${lines.join("\n")}\n`);
    const built = await o.environments.prepareRuntime(
      model,
      requirements,
      path.join(userDir, own ? REQUIREMENTS_FILE : "config.pbtxt"),
      onBuild,
    );
    if (!built)
      throw new AdapterError(`${model}: no environment was built for ${lines.join(", ")}`, {
        hint: "Report this as a bug.",
      });
    envDir = built.dir;
  }

  const originals = path.join(dir, ORIGINALS_DIR);
  for (const e of await fsp.readdir(dir, { withFileTypes: true })) {
    if (!e.isDirectory() || !/^\d+$/.test(e.name)) continue;
    const target = path.join(dir, e.name, ADAPTER_FILE);
    const existing = await fsp.readFile(target).catch(() => undefined);
    await fsp.mkdir(path.join(originals, e.name), { recursive: true });
    // The user's own file of that name (unlikely) is kept for the hash; otherwise the adapter is marked added.
    if (existing) await fsp.writeFile(path.join(originals, e.name, ADAPTER_FILE), existing);
    else await fsp.writeFile(path.join(originals, e.name, `${ADAPTER_FILE}.added`), "");
    await fsp.writeFile(target, ADAPTER_MODEL_PY);
  }

  const configFile = path.join(dir, "config.pbtxt");
  const original = await fsp.readFile(configFile, "utf8").catch(() => undefined);
  if (original === undefined) await fsp.writeFile(path.join(originals, "config.pbtxt.added"), "");
  else await fsp.writeFile(path.join(originals, "config.pbtxt"), original);
  const text = stagedConfig(original ?? "", completion, adapted);
  await fsp.writeFile(configFile, envDir ? withExecutionEnv(text, envDir) : text);
  await fsp.mkdir(path.dirname(path.join(dir, SERVED_AS)), { recursive: true });
  await fsp.writeFile(path.join(dir, SERVED_AS), `${adapted.servedAs}\n`);
  return { backend: completion.backend, servedAs: adapted.servedAs };
}

/** The config the python backend loads: the user's text with the fields that say what runs it replaced. */
function stagedConfig(
  text: string,
  completion: NonNullable<Awaited<ReturnType<typeof backendCompletion>>>,
  adapted: AdaptedBackend,
): string {
  let out = text;
  for (const key of ["platform", "runtime"]) out = removeField(out, key);
  out = setField(out, "backend", 'backend: "python"');
  out = setField(out, "default_model_filename", `default_model_filename: ${JSON.stringify(ADAPTER_FILE)}`);
  const json = completion.parsed.json;
  const completed = completion.report?.completed;
  const added: string[] = [];
  if (completed) {
    const mbs = completed.max_batch_size ?? 0;
    if (mbs !== (json.max_batch_size ?? 0)) out = setField(out, "max_batch_size", `max_batch_size: ${mbs}`);
    const batching = mbs > 0;
    if (!json.input?.length && completed.input?.length)
      added.push(`input [\n  ${completed.input.map((io) => tensorText(io, batching)).join(",\n  ")}\n]`);
    if (!json.output?.length && completed.output?.length)
      added.push(`output [\n  ${completed.output.map((io) => tensorText(io, batching)).join(",\n  ")}\n]`);
    // onnxruntime's AutoCompleteMaxBatch turns dynamic batching on for a model it completes that
    // can batch more than one and has neither scheduler.
    if (
      completion.backend === "onnxruntime" &&
      completion.report!.filled.length > 0 &&
      mbs > 1 &&
      findTopLevelField(out, "dynamic_batching").length === 0 &&
      findTopLevelField(out, "sequence_batching").length === 0
    )
      added.push("dynamic_batching { }");
  }
  added.push(parameter(ADAPTED_BACKEND_PARAM, completion.backend), parameter(ADAPTED_FILE_PARAM, completion.modelFile));
  for (const [key, value] of tensorPlacementParameters(completion.backend, json)) added.push(parameter(key, value));
  const sep = out.length === 0 || out.endsWith("\n") ? "" : "\n";
  return `${out}${sep}\n# Added by triton-dev to the staged copy: served through ${adapted.library} in the python backend.\n${added.join("\n")}\n`;
}
