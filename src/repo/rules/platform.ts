/**
 * Lint rules, area `platform`: what runs the model: the config's name, its platform and backend
 * (as Triton settles them, autofill.ts), and the `runtime` library Triton loads instead of the
 * backend's.
 */
import { BACKENDS, ENSEMBLE_PLATFORM, PLATFORMS, TYPED_BACKENDS } from "../backends.js";
import { AUTOFILL_FILE_NAMES, type AutofilledBackend } from "../autofill.js";
import { ModelInstanceGroup_Kind } from "../gen/model_config_pb.js";
import type { ModelLayout } from "../layout.js";
import { modelNameProblem } from "../model-name.js";
import { closest, quoteList } from "../suggest.js";
import { RUNTIME_FACTS, serverBackends } from "../../runtimes/kinds.js";
import fs from "node:fs";
import path from "node:path";
import type { ModelContext, Reporter } from "./reporter.js";
import { versionsToLoad } from "./versions.js";
import { BACKEND_ERRORS, codes, seenAsModel, type ModelRule, type RuleArea } from "./rule.js";

export const PLATFORM_CODES = codes({
  "name-mismatch": { severity: "error", description: "the config's name is not its folder's name" },
  "ensemble-platform": {
    severity: "error",
    description:
      "ensemble_scheduling without platform 'ensemble', or platform 'ensemble' where Triton does not see one",
  },
  "ensemble-backend": { severity: "error", description: "an ensemble names a backend; ensembles have none" },
  "ensemble-no-scheduling": { severity: "error", description: "platform 'ensemble' without ensemble_scheduling" },
  "platform-unknown": { severity: "error", description: "a platform Triton does not know" },
  "platform-backend-mismatch": { severity: "error", description: "platform and backend name different things" },
  "platform-missing": {
    severity: "error",
    description: "backend 'tensorflow' with no platform, and none Triton can take from the model file",
  },
  "backend-unknown": { severity: "error", description: "a misspelt backend name (close to one Triton ships)" },
  "backend-custom": {
    severity: "warning",
    description: "a backend Triton does not ship: it must be installed in the backend directory",
  },
  "backend-missing": {
    severity: "error",
    description: "neither platform nor backend, and nothing Triton can infer one from",
  },
  "backend-inferred": {
    severity: "warning",
    description: "no platform or backend: Triton infers the backend from the model file",
  },
  "backend-unavailable": { severity: "warning", description: "the backend is not in the runtime chosen" },
  "runtime-missing": {
    severity: "error",
    description: "the runtime library is in none of the folders Triton looks in",
  },
  "runtime-escapes": {
    severity: "error",
    description: "the runtime library's path leads out of the folder Triton found it in",
  },
});

function checkName(ctx: ModelContext, r: Reporter): void {
  const declared = ctx.parsed.config.name;
  if (declared && declared !== ctx.name) {
    r.error(
      "name-mismatch",
      "name#value",
      `model name '${declared}' does not match its directory '${ctx.name}'`,
      modelNameProblem(declared)
        ? `Write name: "${ctx.name}" (or delete the name line).`
        : `Write name: "${ctx.name}" (or delete the name line), or rename the directory to '${declared}'.`,
    );
  }
}

function checkPlatformBackend(ctx: ModelContext, r: Reporter): void {
  const c = ctx.parsed.config;
  const { platform, backend } = c;
  const isEnsembleScheduling = c.schedulingChoice.case === "ensembleScheduling";
  const knownPlatforms = [...Object.keys(PLATFORMS), ENSEMBLE_PLATFORM];
  const knownBackends = Object.keys(BACKENDS);

  if (platform === ENSEMBLE_PLATFORM) {
    if (backend) {
      r.error(
        "ensemble-backend",
        "backend#value",
        `an ensemble has no backend, but backend is '${backend}'`,
        'Delete the backend line: platform: "ensemble" is all an ensemble needs.',
      );
    }
    if (!isEnsembleScheduling) {
      r.error(
        "ensemble-no-scheduling",
        "platform#value",
        "platform is 'ensemble' but there is no ensemble_scheduling",
        "Add ensemble_scheduling { step [ ... ] }, or set the platform or backend that runs this model.",
      );
    }
    return;
  }
  if (isEnsembleScheduling) {
    r.error(
      "ensemble-platform",
      "ensemble_scheduling",
      platform
        ? `ensemble_scheduling needs platform 'ensemble', but platform is '${platform}'`
        : 'ensemble_scheduling without platform: "ensemble": Triton cannot tell what runs this model ("Could not determine backend")',
      (backend ? 'Write platform: "ensemble" and delete the backend line.' : 'Add platform: "ensemble".') +
        (c.input.length === 0 || c.output.length === 0
          ? " An ensemble also declares the input and output tensors its steps read and write (input [ ... ], output [ ... ]), and needs a version folder (an empty 1/)."
          : ""),
    );
    return;
  }

  if (!platform && !backend) {
    const af = ctx.autofill;
    if (af.undetermined) {
      const { message, hint } = undeterminedBackend(ctx.name, ctx.layout, af, c.defaultModelFilename);
      r.error("backend-missing", c.defaultModelFilename ? "default_model_filename#value" : undefined, message, hint);
      return;
    }
    const byName = af.inferredFrom?.startsWith("the model's name");
    r.warning(
      "backend-inferred",
      undefined,
      `no platform or backend: Triton infers backend '${af.backend}' from ${af.inferredFrom}${byName ? `, and hands it ${af.defaultModelFilename}` : ""}`,
      byName
        ? `Write backend: "${af.backend}" if that is meant; otherwise write the backend that runs the model (backend: "python" for model.py).`
        : `Write backend: "${af.backend}" so the model does not depend on which files are present.`,
    );
    checkTypedPair(ctx, r);
    return;
  }

  if (platform && !PLATFORMS[platform]) {
    if (!backend) {
      const asBackend = PLATFORMS[`${platform}_onnx`]
        ? `${platform}_onnx`
        : Object.entries(PLATFORMS).find(([, v]) => v.backend === platform)?.[0];
      const hint = asBackend
        ? `'${platform}' is a backend name: write platform: "${asBackend}" or backend: "${platform}".`
        : knownBackends.includes(platform)
          ? `'${platform}' is a backend name: write backend: "${platform}" instead of platform.`
          : (() => {
              const near = closest(platform, knownPlatforms);
              return near
                ? `Did you mean platform: "${near}"?`
                : `Known platforms are ${quoteList(knownPlatforms)}; other runtimes are chosen with backend.`;
            })();
      r.error("platform-unknown", "platform#value", `unknown platform '${platform}'`, hint);
      return;
    }
    if (TYPED_BACKENDS.has(backend)) {
      r.error(
        "platform-backend-mismatch",
        "platform#value",
        `platform '${platform}' does not go with backend '${backend}'`,
        `Delete the platform line: backend '${backend}' sets it.`,
      );
      return;
    }
  }

  if (
    platform &&
    PLATFORMS[platform] &&
    backend &&
    TYPED_BACKENDS.has(backend) &&
    PLATFORMS[platform]!.backend !== backend
  ) {
    r.error(
      "platform-backend-mismatch",
      "backend#value",
      `platform '${platform}' is served by backend '${PLATFORMS[platform]!.backend}', not '${backend}'`,
      `Write backend: "${PLATFORMS[platform]!.backend}", or delete one of the two lines.`,
    );
    return;
  }

  if (backend && !BACKENDS[backend]) {
    const near = closest(backend, knownBackends);
    if (near) {
      r.error("backend-unknown", "backend#value", `unknown backend '${backend}'`, `Did you mean backend: "${near}"?`);
      return;
    }
    if (!ctx.options.runtime) {
      r.warning(
        "backend-custom",
        "backend#value",
        `backend '${backend}' is not one Triton ships`,
        `Triton loads it from <backend-directory>/${backend}/libtriton_${backend}.so; make sure that exists.`,
      );
    }
  }

  if (backend === "tensorflow" && !ctx.autofill.platform) {
    r.error(
      "platform-missing",
      "backend#value",
      "backend 'tensorflow' needs a platform, and Triton finds none to take from the first sub-folder (a model.savedmodel folder or a model.graphdef file)",
      'Write platform: "tensorflow_savedmodel" or "tensorflow_graphdef".',
    );
  }
}

/**
 * A backend whose platform Triton checks (GetBackendType) that autofill leaves without it: a
 * model named "m.onnxruntime" beside no model.onnx gets backend onnxruntime and no platform,
 * which Triton refuses as a pair.
 */
function checkTypedPair(ctx: ModelContext, r: Reporter): void {
  const { platform, backend } = ctx.autofill;
  if (!TYPED_BACKENDS.has(backend) || PLATFORMS[platform]?.backend === backend) return;
  const own = Object.entries(PLATFORMS).find(([, v]) => v.backend === backend)?.[0];
  r.error(
    "platform-backend-mismatch",
    undefined,
    `Triton takes backend '${backend}' from ${ctx.autofill.inferredFrom ?? "the config"} but no platform for it, and refuses the pair ("unexpected 'platform' and 'backend' pair, got:${platform}, ${backend}")`,
    own ? `Write platform: "${own}".` : "Write the platform and backend that run the model.",
  );
}

/** Triton's "Could not determine backend" (or "unexpected platform type ''"), with what to do. */
export function undeterminedBackend(
  name: string,
  layout: ModelLayout,
  af: AutofilledBackend,
  defaultModelFilename: string,
): { message: string; hint: string } {
  const first = layout.firstSubdir;
  const rel = (f: string) => `${name}/${first?.name ?? "1"}/${f}`;
  if (af.undetermined === "file") {
    const message = defaultModelFilename
      ? `default_model_filename '${defaultModelFilename}' is not a name Triton knows a backend by, and the config names neither platform nor backend, so Triton cannot tell what runs the model ("unexpected platform type ''")`
      : `the model's name '${name}' ends in its only '.', which names no backend, and the config names neither platform nor backend ("unexpected platform type ''")`;
    const hint = defaultModelFilename.endsWith(".py")
      ? 'Add backend: "python".'
      : 'Add the backend that runs it (backend: "python", platform: "onnxruntime_onnx", ...).';
    return { message, hint };
  }
  const where = first
    ? `its first sub-folder '${first.name}' holds no model file Triton recognises`
    : "it has no sub-folder holding a model file";
  return {
    message: `the config sets neither platform nor backend, ${where}, and its name '${name}' is not of the form <name>.<backend>, so Triton cannot tell what runs it ("Could not determine backend for model '${name}'")`,
    hint: `Add backend: "python" for a Python model (${rel("model.py")}), or the platform/backend that runs it (e.g. platform: "onnxruntime_onnx"); or put the model file in ${name}/${first?.name ?? "1"}/ under the name its backend looks for (${AUTOFILL_FILE_NAMES.join(", ")}).`,
  };
}

/**
 * Whether the TensorRT backend completes this config from its plan before core checks it:
 * tensorrt_backend's ModelState::Create runs AutoCompleteConfig when auto-complete is on and the
 * model has a KIND_GPU instance group (core makes an absent group or KIND_AUTO one on a GPU
 * machine, and the backend loads on nothing else), and its FixIO fills a listed tensor's missing
 * data_type and dims from the engine. Lint cannot read plans, so it leaves those to Triton.
 */
export function tensorRtCompletes(ctx: ModelContext): boolean {
  const c = ctx.parsed.config;
  return (
    ctx.autofill.backend === "tensorrt" &&
    ctx.options.autoComplete !== false &&
    (c.instanceGroup.length === 0 ||
      c.instanceGroup.some((g) => g.kind === ModelInstanceGroup_Kind.GPU || g.kind === ModelInstanceGroup_Kind.AUTO))
  );
}

/** The warning for a model whose backend the chosen runtime lacks; returns that backend. */
export function checkRuntimeBackend(ctx: ModelContext, r: Reporter): string | undefined {
  const runtime = ctx.options.runtime;
  if (!runtime || r.hasError(...BACKEND_ERRORS)) return undefined;
  const c = ctx.parsed.config;
  if (c.platform === ENSEMBLE_PLATFORM) return undefined;
  const backend = ctx.autofill.backend;
  const facts = RUNTIME_FACTS[runtime];
  const has = serverBackends(runtime, ctx.options.image, ctx.options.imageBackends);
  if (!backend || !has || has.includes(backend)) return undefined;
  const where = c.backend ? "backend#value" : c.platform ? "platform#value" : undefined;
  const { message, hint } = facts.missingBackend(backend, ctx.options.image);
  r.warning("backend-unavailable", where, message, hint);
  return backend;
}

/**
 * `runtime` names the library Triton loads instead of libtriton_<backend>.so. Triton 2.51 (core's
 * TritonModel::GetBackendLibraryProperties) joins it to each of the version folder, the model
 * folder and the backend's folder (`<backend-directory>/<backend>`) in turn, a leading `/` or
 * not (JoinPath appends the name as it is), and takes the first path that exists (a folder
 * counts); it then refuses the model when that path, made canonical, does not begin with the
 * folder it was found in ("backend library name '...' escapes backend directory '...'"), a string
 * prefix, not a path one. Found nowhere, it is refused too ("unable to find backend library").
 * `runtime: "model.py"` (a backend written in Python) has it look for libtriton_python.so instead.
 *
 * Triton reads the staged copy of the model folder, which holds what the user's folder holds and
 * nothing around it, so a path that leaves the model folder on the way is not found there. In the
 * backend's folder, a path that leads out of it is refused whether or not it meets a file; what
 * the folder holds is known only where the runtime fixes it (RUNTIME_FACTS.backendLibraries),
 * and there a library found nowhere is an error as well.
 */
function checkRuntimeField(ctx: ModelContext, r: Reporter): void {
  const c = ctx.parsed.config;
  const lib = c.runtime;
  if (!lib || c.platform === ENSEMBLE_PLATFORM) return;
  const backend = ctx.autofill.backend;
  if (!backend || lib === "model.py") return;
  const { load } = versionsToLoad(c, ctx.layout);
  const model = ctx.layout.dir;
  const rel = (p: string) => path.relative(path.dirname(model), p) || ".";
  const fix = `Name the library by its file name alone (for the ${backend} backend, libtriton_${backend}.so, or one the model folder holds), or delete the runtime line.`;
  // Each version Triton loads searches its own folder first; the first one that settles it is reported.
  for (const dir of [...load.map((v) => path.join(model, String(v))), model]) {
    const found = resolveInModel(dir, lib, model);
    if (found === undefined) continue;
    if (!found.startsWith(dir)) {
      r.error(
        "runtime-escapes",
        "runtime#value",
        `runtime '${lib}' leads from ${rel(dir)} to ${rel(found)}, out of the folder Triton found it in, so Triton refuses the model ("backend library name '${lib}' escapes backend directory '${rel(dir)}'")`,
        fix,
      );
    }
    return;
  }
  const folder = `<backend-directory>/${backend}`;
  const inBackend = path.posix.normalize(path.posix.join(folder, lib.replace(/^\/+/, "")));
  if (!inBackend.startsWith(folder)) {
    r.error(
      "runtime-escapes",
      "runtime#value",
      `runtime '${lib}' is in neither the version folder nor the model folder, and from the ${backend} backend's folder it leads out of it (to ${inBackend}), so Triton refuses the model ("escapes backend directory" where something is there, "unable to find backend library" where nothing is)`,
      fix,
    );
    return;
  }
  const runtime = ctx.options.runtime;
  const known = runtime ? RUNTIME_FACTS[runtime].backendLibraries?.[backend] : undefined;
  if (!known || known.some((k) => inBackend === `${folder}/${k}`)) return;
  r.error(
    "runtime-missing",
    "runtime#value",
    `runtime '${lib}' is in none of the folders Triton looks in: the version folder, the model folder, or the ${backend} backend's folder of the ${runtime} runtime, which holds ${quoteList(known, "and")}`,
    `Delete the runtime line (the ${backend} backend uses ${known[0]}), or put the library in the model folder.`,
  );
}

/**
 * Where `name` joined to `dir` leads as the system resolves it (each folder on the way must exist
 * before a `..` steps back out of it), or undefined when nothing is there or the way leaves the
 * model folder, which the staged copy Triton reads has nothing around.
 */
function resolveInModel(dir: string, name: string, model: string): string | undefined {
  const inside = (p: string) => p === model || p.startsWith(model + path.sep);
  let cur = dir;
  const parts = name.split("/").filter((p) => p !== "" && p !== ".");
  for (const [i, part] of parts.entries()) {
    cur = part === ".." ? path.dirname(cur) : path.join(cur, part);
    if (!inside(cur)) return undefined;
    const st = fs.statSync(cur, { throwIfNoEntry: false });
    if (!st || (i < parts.length - 1 && !st.isDirectory())) return undefined;
  }
  return cur;
}

export const NAME_RULE: ModelRule = { name: "name", check: checkName };
export const PLATFORM_BACKEND_RULE: ModelRule = { name: "platform and backend", check: checkPlatformBackend };
export const RUNTIME_FIELD_RULE: ModelRule = {
  name: "runtime library",
  applies: seenAsModel,
  check: checkRuntimeField,
};

export const PLATFORM: RuleArea<typeof PLATFORM_CODES> = {
  area: "platform",
  codes: PLATFORM_CODES,
  rules: [NAME_RULE, PLATFORM_BACKEND_RULE, RUNTIME_FIELD_RULE],
};
