/**
 * What a runtime's `facts.ts` says about it: the facts that need none of its code loaded. Types
 * and the flag names only; imports nothing, so every room may read runtimes through kinds.ts.
 */

/** `up`'s flags that only some runtimes take (the runtime's driver parses them). */
export interface RuntimeFlags {
  image?: string | undefined;
  gpus?: string | undefined;
  shmSize?: string | undefined;
  monitoring?: boolean | undefined;
  cluster?: string | undefined;
  keepCluster?: boolean | undefined;
  nodeImage?: string | undefined;
  context?: string | undefined;
  namespace?: string | undefined;
}

export const RUNTIME_FLAG_NAMES: Record<keyof RuntimeFlags, string> = {
  image: "--image",
  gpus: "--gpus",
  shmSize: "--shm-size",
  monitoring: "--monitoring",
  cluster: "--cluster",
  keepCluster: "--keep-cluster",
  nodeImage: "--node-image",
  context: "--context",
  namespace: "--namespace",
};

/** How one of `up`'s runtime flags reads on the command line (cli/up-command.ts builds it from this). */
export interface FlagSpec {
  /** commander's form: `--image <ref>`, or `--monitoring` for a switch (off unless given). */
  usage: string;
  /** --help's text after the runtimes that take it ("docker, kind and cluster runtimes: ..."). */
  help: string;
}

/** A backend a runtime serves through the python backend (RuntimeFacts.adaptedBackends). */
export interface AdaptedBackend {
  /** The runtime library as users know it ("ONNX Runtime"). */
  library: string;
  /**
   * What pip installs into the model's environment, pinned (`onnxruntime==1.20.1`); empty when the
   * library must already be importable there (torch: the model's requirements.txt or the managed environment).
   */
  requirement: string;
  /** The Python module the adapter imports (`onnxruntime`). */
  module: string;
}

/** "served through ONNX Runtime 1.20 in the python backend (local runtime)": as status and lint say it. */
export function adaptedServing(a: AdaptedBackend, runtime: string): string {
  const version = /==(\d+\.\d+)/.exec(a.requirement)?.[1];
  return `served through ${a.library}${version ? ` ${version}` : ""} in the python backend (${runtime} runtime)`;
}

export interface RuntimeFacts {
  /** Backends it can load besides ensembles. */
  backends: readonly string[];
  /** The Triton release it always runs; undefined when the image decides. */
  tritonVersion?: string;
  /**
   * What a user reads when a model's backend is not there (in `image`, where the image decides),
   * where it runs instead (ngc-images.ts BACKEND_HOMES), and how to start it there.
   */
  missingBackend: (backend: string, image?: string) => { message: string; hint: string };
  /**
   * Its backends are the image's (`--image`): `backends` are the default image's, and an NGC
   * flavour's are known (ngc-images.ts IMAGE_FLAVOURS); another image's are not.
   */
  imageDecides?: true;
  /**
   * The libraries each backend's folder holds, where the runtime fixes them (a model's `runtime`
   * field must name one of its backend's); absent where the image decides.
   */
  backendLibraries?: Readonly<Record<string, readonly string[]>>;
  /**
   * Backends it serves through Triton's python backend running the backend's own runtime library
   * (reload/adapters/: the staged copy gets an adapter model.py, the library comes into the model's
   * environment from PyPI, pinned); each is also in `backends`.
   */
  adaptedBackends?: Readonly<Record<string, AdaptedBackend>>;
  /** `up`'s flags it takes. */
  flags: readonly (keyof RuntimeFlags)[];
  /**
   * The command line's form of flags it takes, each declared once, by the first runtime in
   * kinds.ts that takes it (the others that take it are named in its help).
   */
  flagSpecs?: Partial<Record<keyof RuntimeFlags, FlagSpec>>;
  /**
   * Where its Triton sees the run's staging repository and snapshot store, when not at their
   * paths on this machine (a container's mounts): Triton's messages name these paths.
   */
  stagingSeenAs?: { repository: string; store: string };
  /** Its Triton opens this machine's /dev/shm (no container between), so perf's shared memory regions reach it. */
  sharesHostShm?: true;
  /** A python model's requirements.txt gets an environment built for it (envs/); elsewhere the image's Python. */
  buildsEnvironments?: true;
  /**
   * Its part in `--runtime auto` (registry.ts chooseRuntime): "probe", its driver's `autoChoice`
   * is asked, in the order of kinds.ts; "fallback", chosen when no probed runtime is; absent,
   * only ever chosen by name.
   */
  auto?: "probe" | "fallback";
}

/** The runtime flags given on the command line (a false switch counts as not given). */
export function givenFlags(flags: RuntimeFlags): Array<keyof RuntimeFlags> {
  return (Object.keys(RUNTIME_FLAG_NAMES) as Array<keyof RuntimeFlags>).filter(
    (k) => flags[k] !== undefined && flags[k] !== false,
  );
}
