import { Command, Option } from "commander";
import { DEFAULT_IMAGE, DEFAULT_MANIFEST_NAME, REPOSITORY_KEY_HEADER, REPOSITORY_KEY_SECRET_KEY } from "./defaults.js";
import type { CliContext } from "./output.js";
import type { ManifestsDeps, ManifestsFlags } from "./manifests-action.js";

export const MANIFEST_DEFAULTS = {
  pollSecs: "30",
  modelsFrom: "pvc:triton-models",
  shmSize: "1Gi",
} as const;

const collect = (v: string, prev: string[] = []) => [...prev, v];

export function registerManifestsCommand(
  program: Command,
  ctx: CliContext,
  deps: Omit<ManifestsDeps, "output"> = {},
): Command {
  return program
    .command("manifests")
    .description(
      "Print the Kubernetes objects that run Triton as in the article: the poll-mode Deployment (probes, GPU limits, /dev/shm), its Service and a ServiceMonitor.",
    )
    .option("--image <ref>", "Triton image", DEFAULT_IMAGE)
    .option(
      "--gpus <n>",
      "nvidia.com/gpu per pod (requests = limits); 0 for CPU only (default 1, or 0 when --models holds only KIND_CPU models)",
    )
    .option(
      "--poll-secs <n>",
      "--repository-poll-secs: how often Triton looks for changed models (and git-sync for new commits)",
      MANIFEST_DEFAULTS.pollSecs,
    )
    .option("--namespace <ns>", "put every object in this namespace, and render the Namespace too")
    .option("--name <name>", "Deployment, Service and ServiceMonitor name", DEFAULT_MANIFEST_NAME)
    .option(
      "--models-from <source>",
      "where the pod's model repository comes from: pvc:CLAIM[/SUBPATH] a PersistentVolumeClaim you create (and fill) beforehand, mounted read-only; " +
        "hostpath:PATH a folder on the node; git:URL[#REF][//SUBDIR] a git-sync sidecar that clones URL at REF (default: the remote's default branch) " +
        "and pulls every --poll-secs, Triton serving SUBDIR of it",
      MANIFEST_DEFAULTS.modelsFrom,
    )
    .option("--cpu <amount>", "CPU per pod, requests = limits (the article: 8); default none")
    .option("--memory <amount>", "memory per pod, requests = limits (the article: 16Gi); default none")
    .option(
      "--shm-size <size>",
      "size of the memory-backed /dev/shm (the python backend passes tensors through it)",
      MANIFEST_DEFAULTS.shmSize,
    )
    .option(
      "--no-service-monitor",
      "leave out the ServiceMonitor (a cluster without the Prometheus operator has no such kind)",
    )
    .option(
      "--service-monitor-label <key=value>",
      "label the ServiceMonitor so your Prometheus picks it up, e.g. release=prometheus (repeatable)",
      collect,
    )
    .option(
      "--repository-key-secret <name>",
      `restrict Triton's model-repository, shared-memory, logging and trace APIs to the key in this Secret (you create it: kubectl create secret generic NAME --from-literal=${REPOSITORY_KEY_SECRET_KEY}=...; clients send it in the ${REPOSITORY_KEY_HEADER} header). ` +
        "Without it they are open inside the cluster; poll mode refuses load and unload either way",
    )
    .option(
      "--runtime-class <name>",
      "runtimeClassName of the pod, e.g. nvidia where GPUs need the NVIDIA runtime class",
    )
    .option("--node-selector <key=value>", "schedule only on nodes with this label (repeatable)", collect)
    .addOption(
      new Option("--image-pull-policy <policy>", "the container's imagePullPolicy (default: Kubernetes' own)").choices([
        "IfNotPresent",
        "Always",
        "Never",
      ]),
    )
    .option(
      "--models <dir>",
      "first check this local copy of the repository the pod will serve, as `triton-dev lint` does; refuse on errors",
    )
    .option(
      "--require-model <name>",
      "the pod is Ready once this model is (repeatable), whatever the others do: strict readiness off, and the readiness probe asks each named model (default: Ready only when every model loaded)",
      collect,
    )
    .option("--out <dir>", "write one file per object into DIR (numbered in apply order) instead of printing")
    .option("--force", "with --out: replace files that already exist", false)
    .option("--json", "the objects as a JSON array (with --out: one .json file each)", false)
    .action(async (flags: ManifestsFlags) => {
      ctx.exitCode = await (await import("./manifests-action.js")).runManifests(flags, { ...deps, output: ctx.output });
    });
}
