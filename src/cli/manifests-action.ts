import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { UsageError, UserError } from "../errors.js";
import { countBySeverity, displayPath, formatDiagnostic } from "../repo/diagnostics.js";
import { lintRepository } from "../repo/lint.js";
import { listModelFiles } from "../repo/model-files.js";
import {
  BACKEND_HOMES,
  backendsOfImage,
  DEFAULT_IMAGE,
  imageOfFlavour,
  lintFacts,
  type ImageFlavour,
} from "../runtimes/kinds.js";
import {
  isContainedPath,
  isDnsLabel,
  isDnsSubdomain,
  isLabelKey,
  isLabelValue,
  isQuantity,
  isServiceName,
  GPU_RESOURCE,
  renderManifests,
  toYaml,
  type K8sObject,
  type ManifestOptions,
  type ModelSource,
} from "../k8s/manifests.js";
import { REPOSITORY_KEY_HEADER } from "../triton/http-client.js";
import type { Output } from "./output.js";

/** `--gpus` when neither it nor the repository says otherwise: the article's one GPU. */
const MANIFEST_DEFAULT_GPUS = "1";

export interface ManifestsFlags {
  image: string;
  /** Absent: 1, or 0 when --models holds only KIND_CPU models. */
  gpus?: string;
  requireModel?: string[];
  pollSecs: string;
  namespace?: string;
  name: string;
  modelsFrom: string;
  cpu?: string;
  memory?: string;
  shmSize: string;
  serviceMonitor: boolean;
  serviceMonitorLabel?: string[];
  repositoryKeySecret?: string;
  runtimeClass?: string;
  nodeSelector?: string[];
  imagePullPolicy?: "IfNotPresent" | "Always" | "Never";
  models?: string;
  out?: string;
  force: boolean;
  json: boolean;
}

export interface ManifestsDeps {
  output: Output;
  cwd?: string;
}

const MODELS_FROM_FORMS = "hostpath:PATH, pvc:CLAIM[/SUBPATH] or git:URL[#REF][//SUBDIR]";

function usage(flag: string, value: string, expected: string, hint?: string): UsageError {
  return new UsageError(`${flag} must be ${expected}; got '${value}'`, hint ? { hint } : {});
}

function wholeNumber(flag: string, value: string, min: number): number {
  if (!/^\d+$/.test(value) || Number(value) < min) throw usage(flag, value, `a whole number >= ${min}`);
  return Number(value);
}

/** Docker's `1g` is not a Kubernetes size; say what Kubernetes calls it. */
function quantity(flag: string, value: string, example: string): string {
  if (isQuantity(value)) return value;
  const docker = /^(\d+(?:\.\d+)?)([kmgt])i?b?$/i.exec(value);
  const hint = docker
    ? `Kubernetes writes binary sizes as Ki, Mi, Gi and Ti: ${docker[1]}${docker[2]!.toUpperCase()}i.`
    : `For example ${example}.`;
  throw usage(flag, value, "a Kubernetes quantity", hint);
}

function labelPairs(flag: string, values: string[] = []): Record<string, string> | undefined {
  if (values.length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const v of values) {
    const eq = v.indexOf("=");
    const key = eq >= 0 ? v.slice(0, eq) : "";
    const value = eq >= 0 ? v.slice(eq + 1) : "";
    if (!isLabelKey(key) || !isLabelValue(value)) {
      throw usage(
        flag,
        v,
        "KEY=VALUE with a Kubernetes label name and value",
        "For example release=prometheus; names and values use letters, digits, '-', '_' and '.' (at most 63), a name may have a DNS prefix/.",
      );
    }
    out[key] = value;
  }
  return out;
}

const GIT_URL = /^((https?|ssh|git|file):\/\/\S+|[\w.-]+@[\w.-]+:\S+)$/;

/** `--models-from`: hostpath:PATH | pvc:CLAIM[/SUBPATH] | git:URL[#REF][//SUBDIR]. */
export function parseModelsFrom(value: string, pollSecs: number): ModelSource {
  const colon = value.indexOf(":");
  const scheme = colon > 0 ? value.slice(0, colon).toLowerCase() : "";
  const rest = colon > 0 ? value.slice(colon + 1) : "";
  const bad = (expected: string, hint: string) => usage("--models-from", value, expected, hint);
  switch (scheme) {
    case "hostpath": {
      if (!path.posix.isAbsolute(rest))
        throw bad(
          "hostpath: followed by an absolute path on the node",
          "For example hostpath:/data/models (a folder that exists on every node the pod may run on).",
        );
      return { kind: "hostPath", path: rest };
    }
    case "pvc": {
      const slash = rest.indexOf("/");
      const claimName = slash >= 0 ? rest.slice(0, slash) : rest;
      const subPath = slash >= 0 ? rest.slice(slash + 1).replace(/\/+$/, "") : undefined;
      if (!isDnsSubdomain(claimName))
        throw bad(
          "pvc: followed by a PersistentVolumeClaim name",
          "For example pvc:triton-models, or pvc:shared/triton/models for a folder inside the claim.",
        );
      if (subPath !== undefined && subPath !== "" && !isContainedPath(subPath))
        throw bad("pvc:CLAIM/SUBPATH with a relative SUBPATH inside the volume", "Leave out '..' and double slashes.");
      return { kind: "pvc", claimName, ...(subPath ? { subPath } : {}) };
    }
    case "git": {
      let url = rest;
      let ref = "HEAD";
      let subdir: string | undefined;
      const hash = rest.indexOf("#");
      if (hash >= 0) {
        url = rest.slice(0, hash);
        const after = rest.slice(hash + 1);
        const sep = after.indexOf("//");
        ref = sep >= 0 ? after.slice(0, sep) : after;
        if (sep >= 0) subdir = after.slice(sep + 2);
      } else {
        // The URL's own "://" is not the SUBDIR separator.
        const scheme = rest.indexOf("://");
        const sep = rest.indexOf("//", scheme >= 0 ? scheme + 3 : 0);
        if (sep >= 0) {
          url = rest.slice(0, sep);
          subdir = rest.slice(sep + 2);
        }
      }
      subdir = subdir?.replace(/^\/+|\/+$/g, "");
      if (!GIT_URL.test(url))
        throw bad(
          "git: followed by a repository URL",
          "For example git:https://github.com/org/models.git#main//triton (REF and //SUBDIR optional).",
        );
      if (!ref || /\s/.test(ref))
        throw bad(
          "git:URL#REF with a branch, tag or commit after '#'",
          "Leave out #REF to follow the remote's default branch.",
        );
      if (subdir !== undefined && subdir !== "" && !isContainedPath(subdir))
        throw bad("git:URL//SUBDIR with a relative SUBDIR inside the repository", "Leave out '..'.");
      return { kind: "git", repo: url, branch: ref, ...(subdir ? { subdir } : {}), periodSecs: pollSecs };
    }
    default:
      throw bad(MODELS_FROM_FORMS, "See `triton-dev manifests --help` for what each form mounts.");
  }
}

/** The renderer's options from the command line, every flag checked with a message naming it. */
export function manifestOptionsFromFlags(f: ManifestsFlags): ManifestOptions {
  if (!f.image.trim() || /\s/.test(f.image))
    throw usage("--image", f.image, "an image reference", `For example ${DEFAULT_IMAGE}.`);
  const gpus = wholeNumber("--gpus", f.gpus ?? MANIFEST_DEFAULT_GPUS, 0);
  const pollSecs = wholeNumber("--poll-secs", f.pollSecs, 1);
  if (f.namespace !== undefined && !isDnsLabel(f.namespace))
    throw usage(
      "--namespace",
      f.namespace,
      "a namespace name",
      "Lowercase letters, digits and '-', at most 63, starting and ending with a letter or digit.",
    );
  if (!isServiceName(f.name))
    throw usage(
      "--name",
      f.name,
      "a Deployment and Service name",
      "Lowercase letters, digits and '-', at most 63, starting with a letter.",
    );
  const cpu = f.cpu !== undefined ? quantity("--cpu", f.cpu, "8 (cores) or 500m (millicores)") : undefined;
  const memory = f.memory !== undefined ? quantity("--memory", f.memory, "16Gi") : undefined;
  const shmSize = quantity("--shm-size", f.shmSize, "1Gi");
  if (f.repositoryKeySecret !== undefined && !isDnsSubdomain(f.repositoryKeySecret)) {
    throw usage(
      "--repository-key-secret",
      f.repositoryKeySecret,
      "a Secret name",
      "Lowercase letters, digits, '-' and '.'.",
    );
  }
  if (f.runtimeClass !== undefined && !isDnsSubdomain(f.runtimeClass))
    throw usage("--runtime-class", f.runtimeClass, "a RuntimeClass name", "For example nvidia.");
  return {
    name: f.name,
    ...(f.namespace !== undefined ? { namespace: f.namespace } : {}),
    image: f.image,
    gpus,
    ...(f.runtimeClass !== undefined ? { runtimeClassName: f.runtimeClass } : {}),
    pollSecs,
    modelSource: parseModelsFrom(f.modelsFrom, pollSecs),
    ...(cpu !== undefined || memory !== undefined
      ? { resources: { ...(cpu !== undefined ? { cpu } : {}), ...(memory !== undefined ? { memory } : {}) } }
      : {}),
    shmSize,
    ...(f.repositoryKeySecret !== undefined
      ? { repositoryKey: { header: REPOSITORY_KEY_HEADER, secretName: f.repositoryKeySecret } }
      : {}),
    serviceMonitor: f.serviceMonitor,
    ...(f.imagePullPolicy ? { imagePullPolicy: f.imagePullPolicy } : {}),
    ...optional("nodeSelector", labelPairs("--node-selector", f.nodeSelector)),
    ...(f.requireModel?.length ? { requiredModels: f.requireModel } : {}),
    ...optional("serviceMonitorLabels", labelPairs("--service-monitor-label", f.serviceMonitorLabel)),
  };
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/** What the repository the pod serves asks of it, read by `--models`. */
export interface RepositoryNeeds {
  /** Every model that runs instances runs them on KIND_CPU (ensembles run none). */
  cpuOnly: boolean;
  /** Model instances on CPU: one core each when busy. */
  cpuInstances: number;
  /** What Triton and the models hold in memory: the model files, a stub per python instance. */
  memoryBytes: number;
  /** Models with a requirements.txt (packages the NGC image does not have). */
  requirements: string[];
  /** Each model's backend (ensembles have none). */
  backends: Array<{ model: string; backend: string }>;
}

/**
 * What the models' backends decide about the pod (the backend homes' table): a GPU for a backend
 * that runs only on one (TensorRT-LLM configs say KIND_CPU by convention, yet the backend needs
 * the GPU), and the image flavour that has the backend where the default image lacks it.
 */
export function backendDecisions(
  backends: ReadonlyArray<{ model: string; backend: string }>,
  image: string,
  imageGiven: boolean,
): { gpuModels: string[]; image: string; notes: string[]; warnings: string[] } {
  const notes: string[] = [];
  const warnings: string[] = [];
  const gpuModels = backends.filter((b) => BACKEND_HOMES[b.backend]?.gpu).map((b) => b.model);
  const flavours = [
    ...new Set(backends.map((b) => BACKEND_HOMES[b.backend]?.flavour).filter((f) => f && f !== "py3")),
  ] as ImageFlavour[];
  let chosen = image;
  if (!imageGiven && flavours.length === 1) {
    chosen = imageOfFlavour(flavours[0]!, image);
    const users = backends.filter((b) => BACKEND_HOMES[b.backend]?.flavour === flavours[0]);
    notes.push(
      `${users.map((u) => u.model).join(", ")} use${users.length === 1 ? "s" : ""} the ${[...new Set(users.map((u) => u.backend))].join(", ")} backend, which ${image} does not have: image ${chosen} (--image names another)`,
    );
  }
  const has = backendsOfImage(chosen);
  for (const b of backends) {
    if (!has || has.includes(b.backend)) continue;
    const home = BACKEND_HOMES[b.backend];
    warnings.push(
      home
        ? `model '${b.model}' uses the ${b.backend} backend, which the image ${chosen} does not have: ${home.what} run in ${imageOfFlavour(home.flavour, chosen)}${flavours.length > 1 ? " (one image has either vLLM or TensorRT-LLM: render a Deployment per image, each with --models naming its own repository)" : ""}`
        : `model '${b.model}' uses the ${b.backend} backend, which no NGC tritonserver image has: --image must name an image built with it`,
    );
  }
  return { gpuModels, image: chosen, notes, warnings };
}

/** Triton's own memory beside its models, and one python backend stub's (its interpreter and numpy). */
const TRITON_BASE_BYTES = 512 * 1024 ** 2;
const PYTHON_STUB_BYTES = 256 * 1024 ** 2;

async function repositoryNeeds(result: Awaited<ReturnType<typeof lintRepository>>): Promise<RepositoryNeeds> {
  let cpuOnly = true;
  let cpuInstances = 0;
  let memoryBytes = TRITON_BASE_BYTES;
  const requirements: string[] = [];
  const backends: RepositoryNeeds["backends"] = [];
  for (const m of result.models) {
    const c = m.config;
    if (c?.platform === "ensemble") continue;
    if (m.backend) backends.push({ model: m.name, backend: m.backend });
    const groups = c?.instance_group ?? [];
    if (!groups.length || groups.some((g) => g.kind !== "KIND_CPU")) cpuOnly = false;
    const instances = groups.length ? groups.reduce((a, g) => a + (g.count ?? 1), 0) : 1;
    cpuInstances += groups.filter((g) => g.kind === "KIND_CPU").reduce((a, g) => a + (g.count ?? 1), 0);
    if (m.backend === "python") memoryBytes += instances * PYTHON_STUB_BYTES;
    const files = await listModelFiles(m.dir, m.name, { problems: [] }).catch(() => []);
    memoryBytes += files.reduce((a, f) => a + f.size, 0);
    if (fs.existsSync(path.join(m.dir, "requirements.txt"))) requirements.push(m.name);
  }
  return { cpuOnly: cpuOnly && result.models.length > 0, cpuInstances, memoryBytes, requirements, backends };
}

/** Lint the repository the pod will serve, as the NGC image with `gpus` GPUs would load it. */
async function lintFirst(dir: string, gpus: number, output: Output, cwd: string): Promise<RepositoryNeeds> {
  const repo = path.resolve(cwd, dir);
  const st = await fsp.stat(repo).catch(() => undefined);
  if (!st?.isDirectory()) {
    throw new UsageError(`--models ${dir} is not a folder`, {
      hint: "Pass the local model repository (one sub-folder per model) to check before rendering, or leave --models out.",
    });
  }
  const result = await lintRepository(repo, {
    // The image's Triton, as the kind runtime runs it; the backends are judged against the image
    // the Deployment runs (backendDecisions), in words of images, not of a runtime.
    ...lintFacts("kind"),
    gpuAvailable: gpus > 0,
    ...(gpus > 0 ? { gpuCount: gpus } : {}),
    // The pod gets exactly --gpus GPUs: a KIND_GPU model without one would fail to load there.
    gpuMissingSeverity: "error",
  });
  for (const d of result.diagnostics) if (d.code !== "backend-unavailable") output.err(formatDiagnostic(d, cwd));
  const { errors } = countBySeverity(result.diagnostics);
  if (errors > 0) {
    throw new UserError(
      `${displayPath(repo, cwd)} has ${errors} error(s) (above) that Triton would refuse; no manifests rendered`,
      {
        hint: `Fix them (\`triton-dev lint ${dir}\` checks again), or render without --models.`,
      },
    );
  }
  return repositoryNeeds(result);
}

/** 01-deployment-triton-inference-server.yaml: the prefix keeps `kubectl apply -f DIR` in order. */
export function manifestFileName(obj: K8sObject, index: number, ext: "yaml" | "json"): string {
  return `${String(index + 1).padStart(2, "0")}-${obj.kind.toLowerCase()}-${obj.metadata.name}.${ext}`;
}

async function writeFiles(
  objects: K8sObject[],
  dir: string,
  f: ManifestsFlags,
  output: Output,
  cwd: string,
): Promise<void> {
  const outDir = path.resolve(cwd, dir);
  const ext = f.json ? "json" : "yaml";
  const files = objects.map((o, i) => ({
    file: path.join(outDir, manifestFileName(o, i, ext)),
    text: f.json ? JSON.stringify(o, null, 2) + "\n" : toYaml([o]),
  }));
  if (fs.existsSync(outDir) && !fs.statSync(outDir).isDirectory()) {
    throw new UsageError(`--out ${dir} is a file, not a folder`, {
      hint: "Pass a folder to write one file per object into (it is created when missing).",
    });
  }
  if (!f.force) {
    const existing = files.filter((x) => fs.existsSync(x.file)).map((x) => displayPath(x.file, cwd));
    if (existing.length > 0) {
      throw new UserError(`not overwriting ${existing.join(", ")}`, {
        hint: "Pass --force to replace them, or choose another --out folder.",
      });
    }
  }
  await fsp.mkdir(outDir, { recursive: true });
  for (const x of files) await fsp.writeFile(x.file, x.text, { flag: f.force ? "w" : "wx" });
  const shown = files.map((x) => displayPath(x.file, cwd));
  if (f.json) output.out(JSON.stringify({ wrote: shown }, null, 2));
  else
    output.out(
      [
        `wrote ${files.length} file(s):`,
        ...shown.map((s) => `  ${s}`),
        `apply them with: kubectl apply -f ${displayPath(outDir, cwd)}`,
      ].join("\n"),
    );
}

/** Runs `triton-dev manifests`; returns the exit code. */
export async function runManifests(f: ManifestsFlags, deps: ManifestsDeps): Promise<number> {
  const cwd = deps.cwd ?? process.cwd();
  const options = manifestOptionsFromFlags(f);
  if (f.models !== undefined) {
    const needs = await lintFirst(f.models, options.gpus, deps.output, cwd);
    // The backends decide the image and whether a GPU is needed, whatever the instance groups say.
    const decided = backendDecisions(needs.backends, options.image, f.image !== DEFAULT_IMAGE);
    options.image = decided.image;
    for (const n of decided.notes) deps.output.err(`note: ${n}`);
    for (const w of decided.warnings) deps.output.err(`warning: ${w}`);
    if (decided.gpuModels.length) {
      if (f.gpus === "0")
        deps.output.err(
          `warning: ${decided.gpuModels.join(", ")} need${decided.gpuModels.length === 1 ? "s" : ""} a GPU (its backend runs only on one), and --gpus 0 asks for none: it will not load`,
        );
      else if (f.gpus === undefined && needs.cpuOnly)
        deps.output.err(
          `note: ${decided.gpuModels.join(", ")} run${decided.gpuModels.length === 1 ? "s" : ""} on a backend that needs a GPU, whatever its instance_group says: ${options.gpus} ${GPU_RESOURCE} asked for`,
        );
    }
    // The Deployment follows the repository where the flags leave it open.
    if (f.gpus === undefined && needs.cpuOnly && !decided.gpuModels.length) {
      options.gpus = 0;
      deps.output.err(
        `note: every model of ${f.models} runs on KIND_CPU: no ${GPU_RESOURCE} asked for (--gpus N asks for GPUs)`,
      );
    }
    if (f.cpu === undefined && f.memory === undefined) {
      const cpu = String(Math.max(1, needs.cpuInstances));
      const memory = `${Math.ceil(needs.memoryBytes / 1024 ** 2)}Mi`;
      options.requests = { cpu, memory };
      deps.output.err(
        `note: requests cpu ${cpu} (one core per CPU model instance) and memory ${memory} (Triton, a python stub per instance, the model files), no limits; --cpu and --memory set requests = limits instead`,
      );
    }
    if (needs.requirements.length)
      deps.output.err(
        `note: ${needs.requirements.join(", ")} list packages in requirements.txt, which ${options.image} does not install: build an image FROM it that pip-installs them, or pack an environment and name it in the model's EXECUTION_ENV_PATH parameter`,
      );
  }
  const objects = renderManifests(options);
  if (f.out !== undefined) await writeFiles(objects, f.out, f, deps.output, cwd);
  else deps.output.out(f.json ? JSON.stringify(objects, null, 2) : toYaml(objects));
  return 0;
}
