/**
 * Lint rules, area `instances`: where the model runs: instance groups, their kinds, GPUs and
 * profiles.
 */
import { ModelInstanceGroup_KindSchema, ModelInstanceGroup_Kind } from "../gen/model_config_pb.js";
import { type ModelContext, type Reporter, enumName } from "./reporter.js";
import { seenAsModel, codes, type ModelRule, type RuleArea } from "./rule.js";
import { ENSEMBLE_PLATFORM } from "../backends.js";

export const INSTANCES_CODES = codes({
  "instance-count-negative": { severity: "warning", description: "an instance group count below 0" },
  "instance-gpus-not-gpu-kind": {
    severity: "error",
    description: "gpus on an instance group whose kind is not KIND_GPU",
  },
  "gpu-id-invalid": { severity: "error", description: "a GPU id below 0, or beyond the GPUs this machine has" },
  "gpu-unavailable": {
    severity: "error or warning",
    description: "a KIND_GPU group on a machine without a GPU (an error when serving, a warning when linting)",
  },
  "instance-profile-platform": {
    severity: "error",
    description: "an instance group profile on a backend other than TensorRT",
  },
});

declare module "./codes.js" {
  interface CodeTables {
    instances: typeof INSTANCES_CODES;
  }
}

const kindName = (k: ModelInstanceGroup_Kind): string => enumName(ModelInstanceGroup_KindSchema, k);

/**
 * What to do about KIND_GPU without a GPU. KIND_CPU runs the model here only where its backend
 * can run on a CPU and the runtime has it: otherwise the hint says where it runs instead (the
 * backend homes' table), so following it changes the outcome it promises.
 */
function gpuHint(ctx: ModelContext): string {
  const backend = ctx.autofill.backend;
  const gpuOnly = backend ? ctx.options.gpuOnly?.[backend] : undefined;
  if (gpuOnly)
    return `The ${backend} backend runs only on a GPU: serve this model on a machine with an NVIDIA GPU (${gpuOnly.replace(/, on a machine with an NVIDIA GPU$/, "")}).`;
  const server = ctx.options.server;
  const has = server?.backends;
  if (backend && server && has && !has.includes(backend))
    return `KIND_CPU alone does not make it run here: ${server.servedBy ?? `the ${server.runtime} runtime`} has no ${backend} backend (see the backend finding for where it runs).`;
  // A backend served through an adapter whose library triton-dev never installs unasked (torch for
  // TorchScript on the local runtime): KIND_CPU alone would lead to "torch is not importable" at load.
  const adapted = backend ? server?.adaptedBackends?.[backend] : undefined;
  if (adapted && !adapted.requirement)
    return `Use kind: KIND_CPU to run here, with ${adapted.module} in the model's environment (list ${adapted.module} in a requirements.txt beside config.pbtxt, or run \`triton-dev setup --with-site-packages\` from a Python that has it); or KIND_AUTO to use a GPU wherever there is one.`;
  return "Use kind: KIND_CPU to run here, or KIND_AUTO to use a GPU wherever there is one.";
}

function checkInstanceGroups(ctx: ModelContext, r: Reporter): void {
  const c = ctx.parsed.config;
  const { gpuAvailable, gpuCount } = ctx.options;
  c.instanceGroup.forEach((g, i) => {
    const p = `instance_group[${i}]`;
    const label = g.name ? `instance group '${g.name}'` : `instance group ${i + 1}`;
    // No machine has GPU -1, so it needs no count to be wrong (Triton checks ids against the GPUs
    // it finds, and finds none with a negative id).
    const negative = g.kind === ModelInstanceGroup_Kind.GPU ? g.gpus.findIndex((id) => id < 0) : -1;
    if (negative >= 0) {
      r.error(
        "gpu-id-invalid",
        `${p}.gpus[${negative}]#value`,
        `${label} names GPU ${g.gpus[negative]}, and GPU ids start at 0`,
        "List GPU ids from 0 (nvidia-smi -L shows them), or drop gpus to use all of them.",
      );
    } else if (g.kind === ModelInstanceGroup_Kind.GPU) {
      if (gpuAvailable === false) {
        r.report(
          ctx.options.gpuMissingSeverity ?? "warning",
          "gpu-unavailable",
          `${p}.kind#value`,
          `${label} asks for KIND_GPU, but this machine has no GPU`,
          gpuHint(ctx),
        );
      } else if (gpuCount !== undefined) {
        g.gpus.forEach((id, j) => {
          if (id < 0 || id >= gpuCount) {
            r.error(
              "gpu-id-invalid",
              `${p}.gpus[${j}]#value`,
              `${label} names GPU ${id}, but this machine has ${gpuCount} GPU${gpuCount === 1 ? "" : "s"} (0..${gpuCount - 1})`,
              "List GPU ids that exist, or drop gpus to use all of them.",
            );
          }
        });
      }
    } else if (
      (g.kind === ModelInstanceGroup_Kind.CPU || g.kind === ModelInstanceGroup_Kind.MODEL) &&
      g.gpus.length > 0
    ) {
      r.error(
        "instance-gpus-not-gpu-kind",
        `${p}.gpus`,
        `${label} has kind ${kindName(g.kind)} but lists GPUs`,
        `Delete gpus, or use kind: KIND_GPU.`,
      );
    } else if (g.kind === ModelInstanceGroup_Kind.AUTO && g.gpus.length > 0 && gpuAvailable === false) {
      // Without a GPU Triton turns KIND_AUTO into KIND_CPU, which may not list GPUs.
      r.report(
        ctx.options.gpuMissingSeverity ?? "warning",
        "gpu-unavailable",
        `${p}.gpus`,
        `${label} lists GPUs, but this machine has none: Triton makes it KIND_CPU and then refuses the GPU list`,
        "Drop gpus (KIND_AUTO then uses every GPU wherever there are some), or use kind: KIND_CPU.",
      );
    }
    if (g.count < 0) {
      r.warning(
        "instance-count-negative",
        `${p}.count#value`,
        `${label} has count ${g.count}; Triton uses the default (1) instead`,
        "Use a count of 1 or more.",
      );
    }
    if (g.profile.length > 0 && ctx.autofill.platform !== "tensorrt_plan") {
      r.error(
        "instance-profile-platform",
        `${p}.profile`,
        `${label} sets profile, which only TensorRT models support`,
        "Delete profile.",
      );
    }
  });
}

export const INSTANCE_GROUPS_RULE: ModelRule = {
  name: "instance groups",
  // An ensemble has none: ensemble-instance-group says so.
  applies: (ctx, r) =>
    seenAsModel(ctx, r) &&
    ctx.parsed.config.platform !== ENSEMBLE_PLATFORM &&
    ctx.parsed.config.schedulingChoice.case !== "ensembleScheduling",
  check: checkInstanceGroups,
};

export const INSTANCES: RuleArea<typeof INSTANCES_CODES> = {
  area: "instances",
  codes: INSTANCES_CODES,
  rules: [INSTANCE_GROUPS_RULE],
};
