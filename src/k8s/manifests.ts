/**
 * The article's Kubernetes Deployment (poll-mode model control, probes, GPU limits) and what goes
 * with it: an optional Namespace, the Secret holding the repository key, a Service and a
 * ServiceMonitor. `triton-dev manifests` renders these for a real cluster; the kind runtime applies
 * them to its local cluster. Pure functions: no cluster is contacted here.
 */
import path from "node:path";
import { parseAllDocuments, stringify } from "yaml";
import { UserError } from "../errors.js";
import { keyArg, keyShimEnv } from "../triton/key-shim.js";
import { serverArgs, TRITON_DEFAULT_PORTS as CONTAINER_PORTS } from "../triton/server-args.js";

/** Where the pod's /models comes from. */
export type ModelSource =
  /** A directory on the node (kind: the host's staging repository mounted into the node). */
  | {
      kind: "hostPath";
      path: string;
      /**
       * The model repository inside `path`, when it is not `path` itself. The staging repository's
       * entries are relative symlinks into a sibling `store/`, so the kind runtime mounts their
       * common parent and points Triton at `repository/` below it.
       */
      repositorySubdir?: string;
    }
  /** A PersistentVolumeClaim the user provides (a real cluster). */
  | { kind: "pvc"; claimName: string; subPath?: string }
  /** The article's git-sync sidecar. */
  | { kind: "git"; repo: string; branch: string; subdir?: string; periodSecs: number }
  /**
   * An emptyDir that triton-dev fills from this machine through `kubectl exec` into the `sync`
   * sidecar (the cluster runtime); Triton starts once the first copy is complete (SYNC_MARKER).
   */
  | { kind: "sync"; repositorySubdir: string };

export interface ManifestOptions {
  /** Deployment and Service name; default "triton-inference-server" (the article's). */
  name?: string;
  /** When set, every namespaced object carries it and a Namespace object is rendered first. */
  namespace?: string;
  image: string;
  /** 0: no nvidia.com/gpu limit. */
  gpus: number;
  /** "nvidia" on kind with GPUs (the RuntimeClass kind-config/ installs). */
  runtimeClassName?: string;
  pollSecs: number;
  /**
   * Default "poll", the article's. "explicit" (the kind runtime's `--reload explicit`) loads
   * every model at start and then only what the repository API is asked to load.
   */
  modelControlMode?: "poll" | "explicit";
  modelSource: ModelSource;
  /** requests = limits, as in the article; omitted keys are not rendered. */
  resources?: { cpu?: string; memory?: string };
  /**
   * Requests only (no limits), where `resources` says nothing: what the repository's models need
   * to be scheduled (`manifests --models` works them out), without capping a burst.
   */
  requests?: { cpu?: string; memory?: string };
  /**
   * Models the pod is Ready without only: Triton runs with strict readiness off (its
   * /v2/health/ready no longer waits for every model, so one broken model does not hold the pod
   * unready for ever) and the readiness probe asks each of these for /v2/models/NAME/ready.
   */
  requiredModels?: string[];
  /** Size of the memory-backed emptyDir mounted at /dev/shm (python backend); e.g. "1Gi". */
  shmSize: string;
  /**
   * Restrict Triton's model-repository, shared-memory, logging and trace APIs to a key. Kept in a
   * Secret (exposed to the container as an env var and expanded in args by the kubelet, so it is
   * on the node's process list;
   * `value` given: the Secret is rendered too, otherwise the user creates it), or (`keyDir`, the
   * kind runtime) read from a key file by the preloaded library of triton/key-shim.ts, in a folder
   * the pod already mounts, so it is on no command line at all.
   */
  repositoryKey?: { header: string; secretName: string; value?: string } | { header: string; keyDir: string };
  serviceMonitor: boolean;
  /** Added to every object's metadata.labels (e.g. the run id). */
  labels?: Record<string, string>;
  imagePullPolicy?: "IfNotPresent" | "Always" | "Never";
  /** Extra tritonserver flags appended after ours. */
  extraArgs?: string[];
  /** Info-level log lines (the kind runtime reads poll mode's outcomes from the log). */
  logInfo?: boolean;
  /** Triton's own grace for unloading models when the pod is stopped. */
  exitTimeoutSecs?: number;
  /** The pod's nodeSelector (kind: the worker labelled triton-dev.io/managed=true). */
  nodeSelector?: Record<string, string>;
  /**
   * Extra labels on the ServiceMonitor only: a Prometheus operator picks ServiceMonitors by label
   * (kube-prometheus-stack by `release: <its release name>`, the article's `release: prometheus`).
   */
  serviceMonitorLabels?: Record<string, string>;
}

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; [k: string]: unknown };
  [k: string]: unknown;
}

export const DEFAULT_NAME = "triton-inference-server";
/** The label selecting Triton's pods (the article's). */
export const APP_LABEL = { app: "triton" } as const;
export const MANAGED_BY = { "app.kubernetes.io/managed-by": "triton-dev" } as const;
/** Keeps two renders with different names in one namespace from selecting each other's pods. */
export const INSTANCE_LABEL = "app.kubernetes.io/instance";

export const CONTAINER_NAME = "triton";
export const CONTAINER_MODELS = "/models";
export const GIT_SYNC_IMAGE = "registry.k8s.io/git-sync/git-sync:v4.4.0";
/** Where git-sync keeps its checkouts, and the symlink it flips to the newest one. */
export const GIT_ROOT = "/git";
export const GIT_LINK = "current";
/** The sync source's sidecar, and the file whose presence says the first copy is complete. */
export const SYNC_CONTAINER = "sync";
export const SYNC_MARKER = ".triton-dev-synced";
/** The container env var holding the repository key, and the Secret's data key it comes from. */
export const REPOSITORY_KEY_ENV = "TRITON_REPOSITORY_KEY";
export const REPOSITORY_KEY_SECRET_KEY = "key";
/** The article's Prometheus scrape interval. */
export const SCRAPE_INTERVAL = "15s";
export const GPU_RESOURCE = "nvidia.com/gpu";

const MODELS_VOLUME = "models";
const SHM_VOLUME = "dshm";

// --- validation shared with the CLI --------------------------------------------------------

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
/** Kubernetes' quantity grammar, unsigned: 8, 500m, 16Gi, 1.5G, 1e9. */
const QUANTITY = /^(\d+(\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;
/** An HTTP header name (RFC 9110 token). */
const HEADER_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** A Namespace name (and any name that must be a DNS label). */
export function isDnsLabel(s: string): boolean {
  return s.length <= 63 && DNS1123_LABEL.test(s);
}

/** A Service name: a DNS label that starts with a letter. */
export function isServiceName(s: string): boolean {
  return s.length <= 63 && DNS1035_LABEL.test(s);
}

/** A Secret or PersistentVolumeClaim name. */
export function isDnsSubdomain(s: string): boolean {
  return s.length <= 253 && DNS1123_SUBDOMAIN.test(s);
}

/** A CPU or memory amount as Kubernetes writes it, greater than zero. */
export function isQuantity(s: string): boolean {
  const m = QUANTITY.exec(s);
  return !!m && Number(m[1]) > 0;
}

export function isLabelKey(k: string): boolean {
  const slash = k.lastIndexOf("/");
  const prefix = slash >= 0 ? k.slice(0, slash) : undefined;
  const name = slash >= 0 ? k.slice(slash + 1) : k;
  return (prefix === undefined || isDnsSubdomain(prefix)) && name.length <= 63 && LABEL_NAME.test(name);
}

export function isLabelValue(v: string): boolean {
  return v.length <= 63 && LABEL_VALUE.test(v);
}

/** A relative path that stays inside its volume (no leading `/`, no `..`). */
export function isContainedPath(p: string): boolean {
  return p !== "" && !path.posix.isAbsolute(p) && !p.split("/").includes("..");
}

function invalid(field: string, got: unknown, expected: string): UserError {
  return new UserError(`manifest option ${field} is ${JSON.stringify(got)}; it must be ${expected}`, {
    hint: "Fix the value passed to the manifest renderer (the flag or setting it came from).",
  });
}

function checkLabels(field: string, labels: Record<string, string> | undefined): void {
  for (const [k, v] of Object.entries(labels ?? {})) {
    if (!isLabelKey(k))
      throw invalid(
        `${field} key`,
        k,
        "a label name: [prefix/]name, the name up to 63 letters, digits, '-', '_' or '.'",
      );
    if (!isLabelValue(v))
      throw invalid(
        `${field}.${k}`,
        v,
        "a label value: up to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
      );
  }
}

/** Throws a UserError naming the first option Kubernetes (or Triton) would refuse. */
export function validateManifestOptions(o: ManifestOptions): void {
  const name = o.name ?? DEFAULT_NAME;
  if (!isServiceName(name))
    throw invalid("name", name, "a DNS label starting with a letter (lowercase letters, digits and '-', at most 63)");
  if (o.namespace !== undefined && !isDnsLabel(o.namespace))
    throw invalid("namespace", o.namespace, "a DNS label (lowercase letters, digits and '-', at most 63)");
  if (!o.image.trim() || /\s/.test(o.image))
    throw invalid("image", o.image, "an image reference like nvcr.io/nvidia/tritonserver:24.10-py3");
  if (!Number.isInteger(o.gpus) || o.gpus < 0) throw invalid("gpus", o.gpus, "a whole number of GPUs, 0 or more");
  if (!Number.isInteger(o.pollSecs) || o.pollSecs < 1)
    throw invalid("pollSecs", o.pollSecs, "a whole number of seconds, 1 or more");
  if (!isQuantity(o.shmSize)) throw invalid("shmSize", o.shmSize, "a Kubernetes quantity like 1Gi or 512Mi");
  for (const m of o.requiredModels ?? [])
    if (!/^[A-Za-z0-9_.-]{1,240}$/.test(m)) throw invalid("requiredModels", m, "a model name Triton can serve");
  if (o.resources?.cpu !== undefined && !isQuantity(o.resources.cpu))
    throw invalid("resources.cpu", o.resources.cpu, "a Kubernetes quantity like 8 or 500m");
  if (o.resources?.memory !== undefined && !isQuantity(o.resources.memory))
    throw invalid("resources.memory", o.resources.memory, "a Kubernetes quantity like 16Gi");
  if (o.runtimeClassName !== undefined && !isDnsSubdomain(o.runtimeClassName))
    throw invalid("runtimeClassName", o.runtimeClassName, "a RuntimeClass name like nvidia");
  const s = o.modelSource;
  switch (s.kind) {
    case "hostPath":
      if (!path.posix.isAbsolute(s.path)) throw invalid("modelSource.path", s.path, "an absolute path on the node");
      if (s.repositorySubdir !== undefined && !isContainedPath(s.repositorySubdir))
        throw invalid("modelSource.repositorySubdir", s.repositorySubdir, "a relative path inside modelSource.path");
      break;
    case "pvc":
      if (!isDnsSubdomain(s.claimName))
        throw invalid(
          "modelSource.claimName",
          s.claimName,
          "a PersistentVolumeClaim name (lowercase letters, digits, '-' and '.')",
        );
      if (s.subPath !== undefined && !isContainedPath(s.subPath))
        throw invalid("modelSource.subPath", s.subPath, "a relative path inside the volume");
      break;
    case "git":
      if (!s.repo.trim() || /\s/.test(s.repo))
        throw invalid("modelSource.repo", s.repo, "a git URL like https://github.com/org/models.git");
      if (!s.branch.trim() || /\s/.test(s.branch))
        throw invalid("modelSource.branch", s.branch, "a branch, tag or commit (HEAD for the remote's default branch)");
      if (s.subdir !== undefined && !isContainedPath(s.subdir))
        throw invalid("modelSource.subdir", s.subdir, "a relative path inside the repository");
      if (!Number.isInteger(s.periodSecs) || s.periodSecs < 1)
        throw invalid("modelSource.periodSecs", s.periodSecs, "a whole number of seconds, 1 or more");
      break;
    case "sync":
      if (!isContainedPath(s.repositorySubdir))
        throw invalid("modelSource.repositorySubdir", s.repositorySubdir, "a relative path inside the volume");
      break;
  }
  const k = o.repositoryKey;
  if (k) {
    if (!HEADER_TOKEN.test(k.header))
      throw invalid("repositoryKey.header", k.header, "an HTTP header name like triton-dev-key");
    if ("keyDir" in k) {
      if (!path.posix.isAbsolute(k.keyDir) || /\s/.test(k.keyDir))
        throw invalid("repositoryKey.keyDir", k.keyDir, "an absolute path inside the container, without spaces");
    } else if (!isDnsSubdomain(k.secretName))
      throw invalid("repositoryKey.secretName", k.secretName, "a Secret name (lowercase letters, digits, '-' and '.')");
    if (!("keyDir" in k) && k.value !== undefined && (k.value === "" || /[\s,:=]/.test(k.value)))
      throw invalid("repositoryKey.value", "(hidden)", "a non-empty key without spaces, ',', ':' or '='");
  }
  checkLabels("labels", o.labels);
  checkLabels("serviceMonitorLabels", o.serviceMonitorLabels);
  checkLabels("nodeSelector", o.nodeSelector);
}

// --- rendering ---------------------------------------------------------------------------

/** The labels a Deployment selects its pods by, and the Service and ServiceMonitor select by. */
export function selectorLabels(name: string = DEFAULT_NAME): Record<string, string> {
  return { ...APP_LABEL, [INSTANCE_LABEL]: name };
}

function objectLabels(o: ManifestOptions): Record<string, string> {
  return { ...selectorLabels(o.name ?? DEFAULT_NAME), ...MANAGED_BY, ...o.labels };
}

/** The path Triton serves, inside the container. */
export function modelRepositoryPath(source: ModelSource): string {
  switch (source.kind) {
    case "hostPath":
      return source.repositorySubdir ? path.posix.join(CONTAINER_MODELS, source.repositorySubdir) : CONTAINER_MODELS;
    case "pvc":
      return CONTAINER_MODELS;
    case "git":
      return path.posix.join(GIT_ROOT, GIT_LINK, source.subdir ?? "");
    case "sync":
      return path.posix.join(CONTAINER_MODELS, source.repositorySubdir);
  }
}

/** tritonserver's command line, `$(TRITON_REPOSITORY_KEY)` left for the kubelet to expand. */
export function tritonArgs(o: ManifestOptions): string[] {
  return [
    "tritonserver",
    ...serverArgs({
      repository: modelRepositoryPath(o.modelSource),
      reload: o.modelControlMode ?? "poll",
      pollSecs: o.pollSecs,
      ...(o.repositoryKey
        ? {
            repositoryKey:
              "keyDir" in o.repositoryKey
                ? keyArg(o.repositoryKey.header)
                : `${o.repositoryKey.header}=$(${REPOSITORY_KEY_ENV})`,
          }
        : {}),
      ...(o.logInfo ? { logInfo: true } : {}),
      ...(o.exitTimeoutSecs !== undefined ? { exitTimeoutSecs: o.exitTimeoutSecs } : {}),
      ...(o.extraArgs || o.requiredModels?.length
        ? { extra: [...(o.requiredModels?.length ? ["--strict-readiness=false"] : []), ...(o.extraArgs ?? [])] }
        : {}),
    }),
  ];
}

function httpProbe(pathName: string, extra: Record<string, number>): Record<string, unknown> {
  return { httpGet: { path: pathName, port: "http" }, ...extra };
}

function resources(o: ManifestOptions): Record<string, unknown> | undefined {
  const amounts: Record<string, string | number> = {
    ...(o.resources?.cpu !== undefined ? { cpu: o.resources.cpu } : {}),
    ...(o.resources?.memory !== undefined ? { memory: o.resources.memory } : {}),
    ...(o.gpus > 0 ? { [GPU_RESOURCE]: o.gpus } : {}),
  };
  const requested: Record<string, string | number> = {
    ...(o.resources?.cpu === undefined && o.requests?.cpu !== undefined ? { cpu: o.requests.cpu } : {}),
    ...(o.resources?.memory === undefined && o.requests?.memory !== undefined ? { memory: o.requests.memory } : {}),
  };
  if (Object.keys(amounts).length === 0 && Object.keys(requested).length === 0) return undefined;
  // requests = limits, as in the article: the pod is Guaranteed and never evicted for using what
  // it asked for (and extended resources like GPUs must have them equal anyway).
  return {
    ...(Object.keys(amounts).length ? { limits: amounts } : {}),
    requests: { ...amounts, ...requested },
  };
}

function modelsVolume(source: ModelSource): Record<string, unknown> {
  switch (source.kind) {
    case "hostPath":
      return { name: MODELS_VOLUME, hostPath: { path: source.path, type: "Directory" } };
    case "pvc":
      return { name: MODELS_VOLUME, persistentVolumeClaim: { claimName: source.claimName } };
    case "git":
    case "sync":
      return { name: MODELS_VOLUME, emptyDir: {} };
  }
}

function tritonModelsMount(source: ModelSource): Record<string, unknown> {
  switch (source.kind) {
    case "hostPath":
    case "sync":
      return { name: MODELS_VOLUME, mountPath: CONTAINER_MODELS, readOnly: true };
    case "pvc":
      return {
        name: MODELS_VOLUME,
        mountPath: CONTAINER_MODELS,
        readOnly: true,
        ...(source.subPath ? { subPath: source.subPath } : {}),
      };
    case "git":
      // The same path as in git-sync, so its `current` link resolves whether it is relative or not.
      return { name: MODELS_VOLUME, mountPath: GIT_ROOT, readOnly: true };
  }
}

function gitSyncContainer(
  source: Extract<ModelSource, { kind: "git" }>,
  name: string,
  oneTime: boolean,
): Record<string, unknown> {
  return {
    name,
    image: GIT_SYNC_IMAGE,
    args: [
      `--repo=${source.repo}`,
      `--ref=${source.branch}`,
      `--root=${GIT_ROOT}`,
      `--link=${GIT_LINK}`,
      `--period=${source.periodSecs}s`,
      ...(oneTime ? ["--one-time"] : []),
    ],
    volumeMounts: [{ name: MODELS_VOLUME, mountPath: GIT_ROOT }],
    securityContext: { allowPrivilegeEscalation: false },
  };
}

/** Holds the sync source's volume open for `kubectl exec ... tar`; it has the Triton image's shell and tar. */
function syncContainer(o: ManifestOptions): Record<string, unknown> {
  return {
    name: SYNC_CONTAINER,
    image: o.image,
    ...(o.imagePullPolicy ? { imagePullPolicy: o.imagePullPolicy } : {}),
    command: ["/bin/sh", "-c", 'trap "exit 0" TERM; while :; do sleep 3600 & wait $!; done'],
    volumeMounts: [{ name: MODELS_VOLUME, mountPath: CONTAINER_MODELS }],
    securityContext: { allowPrivilegeEscalation: false },
  };
}

function tritonContainer(o: ManifestOptions): Record<string, unknown> {
  const res = resources(o);
  const env: Array<Record<string, unknown>> = [
    // A __pycache__ written into a served model bumps its mtime and makes poll mode reload it.
    { name: "PYTHONDONTWRITEBYTECODE", value: "1" },
  ];
  const waits = o.modelSource.kind === "sync";
  const key = o.repositoryKey;
  const shim = key && "keyDir" in key ? keyShimEnv(key.keyDir) : undefined;
  if (shim) {
    // A synced repository brings the library with its first copy: preloaded before then, every
    // command of the wait would log that the loader cannot find it. The wait sets it for Triton.
    for (const [name, value] of Object.entries(shim)) if (!(waits && name === "LD_PRELOAD")) env.push({ name, value });
  } else if (key && "secretName" in key) {
    env.push({
      name: REPOSITORY_KEY_ENV,
      valueFrom: { secretKeyRef: { name: key.secretName, key: REPOSITORY_KEY_SECRET_KEY } },
    });
  }
  return {
    name: CONTAINER_NAME,
    image: o.image,
    ...(o.imagePullPolicy ? { imagePullPolicy: o.imagePullPolicy } : {}),
    // The kubelet expands $(TRITON_REPOSITORY_KEY) in args from env, so the key never appears in
    // the Deployment itself. A synced repository is waited for: Triton refuses to start without one.
    args: waits
      ? [
          "/bin/sh",
          "-c",
          `until [ -e ${path.posix.join(CONTAINER_MODELS, SYNC_MARKER)} ]; do sleep 0.5; done; ` +
            (shim ? `export LD_PRELOAD='${shim.LD_PRELOAD.replaceAll("'", `'\\''`)}'; ` : "") +
            'exec "$@"',
          "sh",
          ...tritonArgs(o),
        ]
      : tritonArgs(o),
    env,
    ports: [
      { name: "http", containerPort: CONTAINER_PORTS.http },
      { name: "grpc", containerPort: CONTAINER_PORTS.grpc },
      { name: "metrics", containerPort: CONTAINER_PORTS.metrics },
    ],
    ...(res ? { resources: res } : {}),
    volumeMounts: [tritonModelsMount(o.modelSource), { name: SHM_VOLUME, mountPath: "/dev/shm" }],
    // Instead of the article's fixed 30 s / 60 s initialDelaySeconds: Triton answers /v2/health/live
    // only once its initial model load is done, which takes anything from a second (a dev repository)
    // to many minutes (a large model). The startup probe polls every 2 s for up to 15 minutes and
    // holds the other two probes back until then, so the pod is Ready as soon as Triton is and a slow
    // load is never killed by the liveness probe.
    startupProbe: httpProbe("/v2/health/live", { periodSeconds: 2, failureThreshold: 450 }),
    // A server saturated by a perf run can take more than the default 1 s to answer; restarting it
    // mid-benchmark would be worse than a late answer.
    livenessProbe: httpProbe("/v2/health/live", { periodSeconds: 10, timeoutSeconds: 5 }),
    readinessProbe: o.requiredModels?.length
      ? {
          // Several models' readiness in one probe: the image's python3 asks Triton for each.
          exec: {
            command: [
              "python3",
              "-c",
              "import sys, urllib.request\n" +
                "for m in sys.argv[1:]:\n" +
                `    urllib.request.urlopen(f"http://127.0.0.1:${CONTAINER_PORTS.http}/v2/models/{m}/ready", timeout=3)`,
              ...o.requiredModels,
            ],
          },
          periodSeconds: 5,
          timeoutSeconds: 5,
        }
      : httpProbe("/v2/health/ready", { periodSeconds: 5 }),
    securityContext: { allowPrivilegeEscalation: false },
  };
}

function deployment(o: ManifestOptions, meta: (name: string) => K8sObject["metadata"]): K8sObject {
  const name = o.name ?? DEFAULT_NAME;
  const source = o.modelSource;
  const podSpec: Record<string, unknown> = {
    ...(o.runtimeClassName ? { runtimeClassName: o.runtimeClassName } : {}),
    ...(o.nodeSelector && Object.keys(o.nodeSelector).length ? { nodeSelector: { ...o.nodeSelector } } : {}),
    // Clusters often taint GPU nodes so that only pods asking for GPUs land there.
    ...(o.gpus > 0 ? { tolerations: [{ key: GPU_RESOURCE, operator: "Exists", effect: "NoSchedule" }] } : {}),
    // git-sync clones once before Triton starts: Triton refuses to start on a repository path that
    // does not exist yet, and the sidecar alone gives no ordering.
    ...(source.kind === "git" ? { initContainers: [gitSyncContainer(source, "git-sync-init", true)] } : {}),
    containers: [
      tritonContainer(o),
      ...(source.kind === "git" ? [gitSyncContainer(source, "git-sync", false)] : []),
      ...(source.kind === "sync" ? [syncContainer(o)] : []),
    ],
    volumes: [
      modelsVolume(source),
      // The python backend passes tensors through /dev/shm; a container runtime's default 64 MB
      // is too small for more than a few instances.
      { name: SHM_VOLUME, emptyDir: { medium: "Memory", sizeLimit: o.shmSize } },
    ],
  };
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: meta(name),
    spec: {
      replicas: 1,
      // With GPUs a rolling update would need a second GPU for the new pod while the old one still
      // holds its own; on a one-GPU machine it would wait forever.
      ...(o.gpus > 0 ? { strategy: { type: "Recreate" } } : {}),
      selector: { matchLabels: selectorLabels(name) },
      template: {
        metadata: { labels: objectLabels(o) },
        spec: podSpec,
      },
    },
  };
}

/** The objects, in the order `kubectl apply` should create them. */
export function renderManifests(o: ManifestOptions): K8sObject[] {
  validateManifestOptions(o);
  const name = o.name ?? DEFAULT_NAME;
  const labels = objectLabels(o);
  const meta = (n: string, extra: Record<string, string> = {}): K8sObject["metadata"] => ({
    name: n,
    ...(o.namespace ? { namespace: o.namespace } : {}),
    labels: { ...labels, ...extra },
  });
  const objects: K8sObject[] = [];
  if (o.namespace)
    objects.push({ apiVersion: "v1", kind: "Namespace", metadata: { name: o.namespace, labels: { ...labels } } });
  const secretKey = o.repositoryKey && "secretName" in o.repositoryKey ? o.repositoryKey : undefined;
  if (secretKey?.value !== undefined) {
    objects.push({
      apiVersion: "v1",
      kind: "Secret",
      metadata: meta(secretKey.secretName),
      type: "Opaque",
      stringData: { [REPOSITORY_KEY_SECRET_KEY]: secretKey.value },
    });
  }
  objects.push(deployment(o, meta));
  objects.push({
    apiVersion: "v1",
    kind: "Service",
    metadata: meta(name),
    spec: {
      type: "ClusterIP",
      selector: selectorLabels(name),
      ports: (["http", "grpc", "metrics"] as const).map((p) => ({
        name: p,
        port: CONTAINER_PORTS[p],
        targetPort: p,
        protocol: "TCP",
      })),
    },
  });
  if (o.serviceMonitor) {
    objects.push({
      apiVersion: "monitoring.coreos.com/v1",
      kind: "ServiceMonitor",
      metadata: meta(name, o.serviceMonitorLabels),
      spec: {
        selector: { matchLabels: selectorLabels(name) },
        ...(o.namespace ? { namespaceSelector: { matchNames: [o.namespace] } } : {}),
        endpoints: [{ port: "metrics", path: "/metrics", interval: SCRAPE_INTERVAL }],
      },
    });
  }
  return objects;
}

// --- YAML ----------------------------------------------------------------------------------

// YAML 1.1, because that is how kubectl and the API server (sigs.k8s.io/yaml) read it: strings
// like "yes", "on" or "0755" are then quoted, where YAML 1.2 output would leave them bare and
// Kubernetes would read a bool or an octal number. No line folding: a long arg stays one line.
const YAML_OPTIONS = { version: "1.1", lineWidth: 0 } as const;

/** Multi-document YAML, `---` between objects. */
export function toYaml(objects: K8sObject[]): string {
  return objects.map((obj) => stringify(obj, YAML_OPTIONS)).join("---\n");
}

/**
 * Reads multi-document YAML the way kubectl does; empty documents are skipped. Throws a UserError
 * naming `source` and the line when the text is not YAML or a document is not a Kubernetes object.
 */
export function parseYamlObjects(text: string, source: string): K8sObject[] {
  const out: K8sObject[] = [];
  for (const doc of parseAllDocuments(text, { version: "1.1", prettyErrors: true })) {
    const err = doc.errors[0];
    if (err) {
      const at = err.linePos?.[0];
      throw new UserError(
        `${source}${at ? `:${at.line}:${at.col}` : ""}: not valid YAML: ${err.message.split("\n")[0]}`,
        {
          hint: "Fix the YAML syntax at that spot (indentation is the usual culprit).",
        },
      );
    }
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue;
    const o = value as Partial<K8sObject>;
    if (
      typeof o !== "object" ||
      Array.isArray(o) ||
      typeof o.apiVersion !== "string" ||
      typeof o.kind !== "string" ||
      typeof o.metadata?.name !== "string"
    ) {
      const line = doc.contents?.range ? lineOf(text, doc.contents.range[0]) : 1;
      throw new UserError(
        `${source}:${line}:1: this document is not a Kubernetes object (it needs apiVersion, kind and metadata.name)`,
        {
          hint: "Every document between --- lines must be one object.",
        },
      );
    }
    out.push(o as K8sObject);
  }
  return out;
}

function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text[i] === "\n") line++;
  return line;
}
