import { REAL_CLOCK, type Clock } from "../../clock.js";
import { requireTrustedHome } from "../../config/home-trust.js";
import type { Paths } from "../../config/paths.js";
import type { ModelEnvironments } from "../../envs/model-environments.js";
import { ServerStartError, UserError } from "../../errors.js";
import { log as rootLog } from "../../log/logger.js";
import { isOurProcess } from "../../state/process.js";
import type { RunState } from "../../state/run-state.js";
import type { AttachedRun, DriverContext, PlanInput, PlannedRun, RuntimeDriver, Supervision } from "../driver.js";
import { deliverRunFolder } from "../delivery.js";
import { DEFAULT_IMAGE } from "../ngc-images.js";
import { tritonLiveAt } from "../../triton/readiness.js";
import type { LocalEnvironment } from "./environment.js";
import type { SpawnFn } from "./local-runtime.js";
import { setupEvent } from "./events.js";
import { removeLocalLeftovers } from "./leftovers.js";
import { stopProcessGroup, unloadWatch } from "./process-group.js";

// What plans and starts a server (the managed environment, its health, pip, the key shim) is
// loaded when `up` plans: `down` and `q` only stop one, and a stop has a second to do it in.
const planning = async () => ({
  ...(await import("./environment.js")),
  ...(await import("./environment-health.js")),
  ...(await import("./local-runtime.js")),
  ...(await import("../../envs/builder.js")),
  ...(await import("../../envs/model-environments.js")),
  ...(await import("../../gpu/detect.js")),
  ...(await import("../../net/ports.js")),
});

/** The local runtime takes no flags of its own. */
export type LocalOptions = Record<string, never>;

export interface LocalDeps {
  spawn?: SpawnFn;
  /** NVIDIA GPUs this machine shows (undefined: no nvidia-smi). */
  detectGpus?: () => Promise<number | undefined>;
  procRoot?: string;
}

/**
 * The python backend starts each stub through `bash -c` with the model's path (under the runs
 * folder) and its own folder (the backends) unquoted on the command line: a path with a space
 * makes every python model's load hang, one with `$(...)` runs it, and a non-ASCII one fails in
 * the stub. Only characters bash takes literally in a word pass.
 */
const STUB_SAFE_PATH = /^[A-Za-z0-9_./+,:=@%-]+$/;

/** The first of the paths the python backend puts on its shell command line that it cannot take, with why. */
export function unsafeStubPath(paths: Record<string, string>): { what: string; path: string } | undefined {
  const found = Object.entries(paths).find(([, p]) => !STUB_SAFE_PATH.test(p));
  return found ? { what: found[0], path: found[1] } : undefined;
}

const log = rootLog.child("local");

/**
 * Environments for python models with a requirements.txt, layered on the managed environment
 * (its Python is the stub's, its numpy the one the stub was built for). `say` gets progress.
 */
async function localModelEnvironments(
  environment: LocalEnvironment,
  paths: Pick<Paths, "home">,
  env: NodeJS.ProcessEnv,
  say: (message: string) => void,
): Promise<ModelEnvironments> {
  const { EnvironmentBuilder, environmentsRootIn, modelEnvironments } = await planning();
  const root = environmentsRootIn(paths.home, env);
  // pip and the models' Python run from there.
  if (env.TRITON_DEV_ENVS_DIR) requireTrustedHome(root, { what: "TRITON_DEV_ENVS_DIR" });
  const builder = new EnvironmentBuilder({
    root,
    base: { python: environment.venvPython, sitePackages: environment.sitePackages },
    env,
    onProgress: (p) => {
      // pip's own lines: only the steps a user follows (the full output is in the build log).
      if (p.line === undefined) say(`${p.model}: ${p.message}`);
      else if (/^(Collecting|Downloading|Installing|Successfully)/.test(p.line)) say(`${p.model}: pip: ${p.line}`);
    },
  });
  return modelEnvironments(builder, (model, note) => say(`${model}: ${note}`));
}

/** Triton as a local process: the tritonserver binary of the nvidia-pytriton wheel in the managed environment. */
export function createLocalDriver(deps: LocalDeps = {}): RuntimeDriver<LocalOptions> {
  // A call's waits run on its context's clock (the session's), else the real one.
  const clockOf = (ctx: { clock?: Clock }) => ctx.clock ?? REAL_CLOCK;
  return {
    kind: "local",
    // No flags of its own: another runtime's are refused before this is asked (session.ts).
    options() {
      return {};
    },
    plan: (input, _options, ctx) => planLocalRun(input, ctx, deps, clockOf(ctx)),
    attach: (state, ctx) => attachLocalRun(state, ctx, deps.procRoot, clockOf(ctx)),
    doctor: async (ctx) => (await import("./doctor.js")).localChecks(ctx.paths, ctx.env),
    cleanup: async (graceMs, ctx) => removeLocalLeftovers(graceMs, ctx.paths, deps.procRoot, clockOf(ctx)),
  };
}

/** The managed environment (set up on first use) and its health, free ports and the GPUs: before the server starts. */
async function planLocalRun(input: PlanInput, ctx: DriverContext, deps: LocalDeps, clock: Clock): Promise<PlannedRun> {
  const { ensureEnvironment, requireFreePorts, detectNvidiaGpus, precompilePython, LocalRuntime } = await planning();
  const environment = await ensureEnvironment({
    paths: ctx.paths,
    env: ctx.env,
    onProgress: (progress) => ctx.emit(setupEvent(progress)),
  });
  await requireStubSafePaths(environment, ctx.paths, ctx.env);
  await requireMatchingEnvironment(ctx.paths);
  await requireFreePorts(input.ports, input.host);
  const gpus = await (deps.detectGpus ?? detectNvidiaGpus)();
  return {
    gpus,
    // Where it runs, as the backends this runtime lacks are named: here it needs only a GPU.
    gpuSkipReason: `it needs a GPU (KIND_GPU) and this machine has none; it runs on a machine with an NVIDIA GPU, with this runtime or the docker or kind runtime (\`--gpus all\`, image ${DEFAULT_IMAGE})`,
    canDisableAutoComplete: true,
    // Triton reads the run folder where it is.
    deliver: (folder) => deliverRunFolder(folder, ctx),
    // The stub's Python compiles each model.py once, here, so a load does not write a
    // __pycache__ into the served folder (poll mode would take it for a change).
    prepareStaged: (dir) => precompilePython(environment, dir),
    environments: await localModelEnvironments(environment, ctx.paths, ctx.env, (message) =>
      ctx.emit({ type: "progress", runtime: "local", step: "environment", message }),
    ),
    async start(o) {
      const handle = await new LocalRuntime({
        environment,
        env: ctx.env,
        ...(deps.spawn ? { spawn: deps.spawn } : {}),
        clock,
      }).start(o);
      if (handle.pid === undefined) {
        throw new ServerStartError(`could not launch ${environment.serverBin}`, {
          hint: "Run `triton-dev setup --force` to reinstall the environment.",
        });
      }
      return { handle, executable: environment.serverBin, record: undefined, readiness: tritonLiveAt };
    },
    startHint: () => undefined,
  };
}

/** Refuses a folder the python backend cannot put on its shell command line (see STUB_SAFE_PATH). */
async function requireStubSafePaths(
  environment: LocalEnvironment,
  paths: Pick<Paths, "runsDir" | "home">,
  env: NodeJS.ProcessEnv,
): Promise<void> {
  const { environmentsRootIn } = await planning();
  const unsafe = unsafeStubPath({
    "state folder (TRITON_DEV_STATE_DIR)": paths.runsDir,
    "home (TRITON_DEV_HOME)": environment.backendDir,
    // A model's own environment is `source`d on that command line too.
    "model environments folder (TRITON_DEV_ENVS_DIR)": environmentsRootIn(paths.home, env),
  });
  if (unsafe) {
    throw new UserError(
      `the python backend cannot start models under ${JSON.stringify(unsafe.path)}: it starts each model's process through a shell with this path unquoted, and a space, a non-ASCII character or shell syntax in it breaks every load`,
      {
        hint: `Point the ${unsafe.what} at a folder whose path holds only letters, digits and '_', '-', '.', '/'.`,
      },
    );
  }
}

/**
 * A package installed into the managed environment by hand (numpy 2) breaks models while Triton
 * still says READY: refused here, with the fix.
 */
async function requireMatchingEnvironment(paths: Paths): Promise<void> {
  const { checkManagedEnvironment, strongestFix, fixCommand } = await planning();
  const health = await checkManagedEnvironment(paths);
  const fix = strongestFix(health.problems);
  if (fix) {
    throw new UserError(
      `the managed environment no longer matches the python backend stub: ${health.problems.map((p) => p.problem).join("; ")}`,
      {
        hint: `Run \`${fixCommand(fix)}\`; a model's own packages go in a requirements.txt beside its config.pbtxt, never into the managed environment.`,
      },
    );
  }
}

/** A recorded run's server, found again by its pid (`status`, `down`, the watcher). */
function attachLocalRun(
  state: RunState,
  ctx: { paths: Paths; env: NodeJS.ProcessEnv },
  procRoot: string | undefined,
  clock: Clock,
): AttachedRun {
  const alive = async () => isOurProcess(state.pid, state.executable, procRoot);
  return {
    state,
    alive,
    describe: () => ({
      where: `pid ${state.pid}`,
      goneWhat: `the server (pid ${state.pid})`,
      lines: [],
      json: {},
    }),
    handsOverTo: () => false,
    async stop(graceMs, onProgress, waitFor) {
      // A crashed server's stubs (the models' code) may outlive it: cleanup() ends them.
      const outcome = (await alive())
        ? await stopProcessGroup(state.pid, { graceMs, unloads: unloadWatch(state, onProgress, waitFor), clock })
        : undefined;
      return { what: `pid ${state.pid}`, staleWhat: `pid ${state.pid}`, json: {}, ...(outcome ? { outcome } : {}) };
    },
    supervise: () => superviseLocalRun(ctx),
  };
}

/** The detached watcher's part: the models' precompile and their environments, where the managed environment is. */
async function superviseLocalRun(ctx: { paths: Paths; env: NodeJS.ProcessEnv }): Promise<Supervision> {
  const { loadEnvironment, precompilePython } = await planning();
  const environment = await loadEnvironment(ctx.paths);
  return {
    ...(environment
      ? {
          prepareStaged: (dir: string) => precompilePython(environment, dir),
          // The detached watcher has no screen: progress goes to its log (supervisor.log).
          environments: await localModelEnvironments(environment, ctx.paths, ctx.env, (message) => log.info(message)),
        }
      : {}),
    stop: async () => {},
  };
}

export const localDriver = createLocalDriver();

/** The entry registry.ts loads for this runtime (`./local/driver.js`'s `driver`). */
export { localDriver as driver };
