/**
 * The files of kind-config/ (shipped with the package), read for the kind runtime: the cluster
 * configuration with this machine's paths filled in, and the GPU add-ons as objects to apply.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { isMap, isScalar, isSeq, parseDocument, type YAMLMap } from "yaml";
import { UserError } from "../../errors.js";
import { isDnsLabel, parseYamlObjects, type K8sObject } from "../../k8s/manifests.js";

/** Where the host's triton-dev state folder appears inside the kind worker node. */
export const WORKER_MOUNT = "/triton-dev";
/** The hostPath cluster.yaml and cluster-gpu.yaml carry until the real state folder replaces it. */
export const STATE_DIR_PLACEHOLDER = "/path/to/triton-dev-state";
/** The worker's label, used as the Triton pod's nodeSelector. */
export const MANAGED_NODE_LABEL = { "triton-dev.io/managed": "true" } as const;
/** The RuntimeClass nvidia-runtimeclass.yaml installs. */
export const NVIDIA_RUNTIME_CLASS = "nvidia";

export const KIND_CONFIG_FILES = {
  cluster: "cluster.yaml",
  clusterGpu: "cluster-gpu.yaml",
  runtimeClass: "nvidia-runtimeclass.yaml",
  devicePlugin: "nvidia-device-plugin.yaml",
  nodeGpuSetup: "node-gpu-setup.sh",
} as const;

/** kind-config/ of this package (dist/runtimes/kind/ -> the package root), as compose/ is found. */
const KIND_CONFIG_DIR = fileURLToPath(new URL("../../../kind-config", import.meta.url));

/** The kind-config folder of this installation; throws when it is missing. */
export function kindConfigDir(dir: string = KIND_CONFIG_DIR): string {
  if (!fs.existsSync(dir)) {
    throw new UserError(`the kind cluster files (${dir}) are missing from this installation`, {
      hint: "Reinstall triton-dev; kind-config/ ships with it.",
    });
  }
  return dir;
}

function readConfigFile(file: string, dir: string): { full: string; text: string } {
  const full = path.join(kindConfigDir(dir), file);
  try {
    return { full, text: fs.readFileSync(full, "utf8") };
  } catch (err) {
    throw new UserError(`cannot read ${full}: ${(err as Error).message}`, {
      hint: "Reinstall triton-dev; kind-config/ ships with it.",
      cause: err,
    });
  }
}

export interface ClusterConfigOptions {
  /** The kind cluster name (kind prefixes its kubectl context with `kind-`). */
  name: string;
  /** The host's triton-dev state folder, mounted into the worker at WORKER_MOUNT. Absolute. */
  stateDir: string;
  /** cluster-gpu.yaml (GPU passthrough) instead of cluster.yaml. */
  gpu: boolean;
  /** A kindest/node image for every node, when not kind's default. */
  nodeImage?: string;
  /** Read the files from here instead of this installation's kind-config/ (tests). */
  configDir?: string;
}

/**
 * cluster.yaml or cluster-gpu.yaml with the cluster name and the real state folder filled in,
 * ready for `kind create cluster --config -`. The file's comments are kept.
 */
export function renderClusterConfig(o: ClusterConfigOptions): string {
  if (!isDnsLabel(o.name)) {
    throw new UserError(
      `'${o.name}' cannot be a kind cluster name: use lowercase letters, digits and '-' (at most 63)`,
      { hint: "For example triton-dev." },
    );
  }
  if (!path.isAbsolute(o.stateDir)) {
    throw new UserError(`the state folder to mount into the kind node must be an absolute path; got '${o.stateDir}'`, {
      hint: "Pass path.resolve(stateDir).",
    });
  }
  if (o.nodeImage !== undefined && (!o.nodeImage.trim() || /\s/.test(o.nodeImage))) {
    throw new UserError(`'${o.nodeImage}' is not an image reference`, { hint: "For example kindest/node:v1.33.1." });
  }
  const file = o.gpu ? KIND_CONFIG_FILES.clusterGpu : KIND_CONFIG_FILES.cluster;
  const { full, text } = readConfigFile(file, o.configDir ?? KIND_CONFIG_DIR);
  const doc = parseDocument(text, { prettyErrors: true });
  const broken = (why: string) =>
    new UserError(`${full}: ${why}`, { hint: "Restore the file from the triton-dev package (reinstall triton-dev)." });
  if (doc.errors[0]) throw broken(`not valid YAML: ${doc.errors[0].message.split("\n")[0]}`);
  const nodes = doc.get("nodes");
  if (!isSeq(nodes)) throw broken("has no nodes list");

  let mounts = 0;
  for (const node of nodes.items) {
    if (!isMap(node)) continue;
    if (o.nodeImage) node.set("image", o.nodeImage);
    const extra = node.get("extraMounts");
    if (!isSeq(extra)) continue;
    for (const m of extra.items) {
      if (isMap(m) && scalarValue(m, "containerPath") === WORKER_MOUNT) {
        m.set("hostPath", o.stateDir);
        mounts++;
      }
    }
  }
  if (mounts === 0)
    throw broken(
      `no node mounts anything at ${WORKER_MOUNT} (an extraMounts entry with containerPath: ${WORKER_MOUNT})`,
    );
  doc.set("name", o.name);
  return doc.toString({ lineWidth: 0 });
}

function scalarValue(m: YAMLMap, key: string): unknown {
  const v = m.get(key, true);
  return isScalar(v) ? v.value : v;
}

/** The objects of one of kind-config's Kubernetes files (the RuntimeClass, the device plugin). */
export function readKindManifest(file: string, configDir: string = KIND_CONFIG_DIR): K8sObject[] {
  const { full, text } = readConfigFile(file, configDir);
  return parseYamlObjects(text, full);
}

/** The path of node-gpu-setup.sh, to pipe into `docker exec -i NODE bash -s`. */
export function nodeGpuSetupScript(configDir: string = KIND_CONFIG_DIR): string {
  return path.join(kindConfigDir(configDir), KIND_CONFIG_FILES.nodeGpuSetup);
}
