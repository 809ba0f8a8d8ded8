import fsp from "node:fs/promises";
import path from "node:path";
import { requireTrustedHome } from "../../config/home-trust.js";
import type { Paths } from "../../config/paths.js";
import type { ModelEnvironments } from "../../envs/model-environments.js";
import { ServerStartError, UserError } from "../../errors.js";
import { log as rootLog } from "../../log/logger.js";
import { findProcesses, isOurProcess, processGroupOf, runsAsUs, runsOurExecutable } from "../../state/process.js";
import type { RunState } from "../../state/run-state.js";
import type { AttachedRun, Leftovers, PlannedRun, RuntimeDriver } from "../driver.js";
import { tritonLiveAt } from "../../triton/readiness.js";
import { deliverRunFolder } from "../delivery.js";
import { DEFAULT_IMAGE } from "../ngc-images.js";
import type { LocalEnvironment } from "./environment.js";
import type { SpawnFn } from "./local-runtime.js";
import { setupEvent } from "./events.js";
import { groupMembers, stopProcessGroup, unloadWatch } from "./process-group.js";

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

/**
 * Servers we started: of our uid, running the managed environment's tritonserver (by
 * /proc/PID/exe, which argv cannot fake), with our runs folder in their --model-repository flag.
 */
export function findOrphanServers(runsDir: string, serverBin: string, procRoot = "/proc"): number[] {
  const marker = `--model-repository=${runsDir}${path.sep}`;
  return findProcesses(
    (argv, pid) => argv.some((a) => a.startsWith(marker)) && runsOurExecutable(pid, serverBin, procRoot),
    procRoot,
  );
}

/**
 * The managed environment's tritonserver and python stub (what runs a python model's code), from
 * setup's marker, read without loading setup's code (`down` stays light); undefined without one.
 */
async function managedBinaries(
  paths: Pick<Paths, "envMarker" | "home">,
): Promise<{ serverBin: string; stubBin: string } | undefined> {
  try {
    // A marker in a home another user can change names nothing of ours.
    requireTrustedHome(paths.home);
    const m = JSON.parse(await fsp.readFile(paths.envMarker, "utf8")) as { serverBin?: unknown; backendDir?: unknown };
    if (typeof m.serverBin !== "string" || typeof m.backendDir !== "string") return undefined;
    return { serverBin: m.serverBin, stubBin: path.join(m.backendDir, "python", "triton_python_backend_stub") };
  } catch {
    return undefined;
  }
}

/**
 * Python stubs of ours (our uid, the managed environment's stub binary by /proc/PID/exe) serving a
 * model of a run folder under `runsDir` (the model's path is the stub's first argument), grouped by
 * their process group: the server that started them.
 */
export function findStubs(runsDir: string, stubBin: string, procRoot = "/proc"): Map<number, number[]> {
  const prefix = `${runsDir}${path.sep}`;
  const groups = new Map<number, number[]>();
  const pids = findProcesses(
    (argv, pid) => (argv[1] ?? "").startsWith(prefix) && runsOurExecutable(pid, stubBin, procRoot),
    procRoot,
  );
  for (const pid of pids) {
    const pgid = processGroupOf(pid, procRoot);
    if (pgid !== undefined) groups.set(pgid, [...(groups.get(pgid) ?? []), pid]);
  }
  return groups;
}

/**
 * End what is left of a server's process group once the server is gone (a crash): its python
 * stubs and the processes the model code started, SIGTERM then SIGKILL after `graceMs`. Only a
 * group holding a stub of ours is touched, and only when every member runs as us (the group is
 * the dead server's session: nothing else can join it, but a member could have changed uid).
 */
async function endLeftGroup(pgid: number, stubs: number[], graceMs: number, procRoot = "/proc"): Promise<boolean> {
  const members = (groupMembers(pgid, procRoot) ?? []).filter((m) => m.state !== "Z" && m.state !== "X");
  if (stubs.length === 0 || members.length === 0) return false;
  const strangers = members.filter((m) => !runsAsUs(Number(m.pid), procRoot));
  if (strangers.length) {
    log.warn("a process in the group of our crashed server runs as another user; it is left alone", {
      pgid,
      pids: strangers.map((m) => m.pid),
    });
    return false;
  }
  await stopProcessGroup(pgid, { graceMs, what: "python model processes a crashed server left" });
  return true;
}

/** Triton as a local process: the tritonserver binary of the nvidia-pytriton wheel in the managed environment. */
export function createLocalDriver(deps: LocalDeps = {}): RuntimeDriver<LocalOptions> {
  return {
    kind: "local",
    // No flags of its own: another runtime's are refused before this is asked (session.ts).
    options() {
      return {};
    },
    async plan(input, _options, ctx): Promise<PlannedRun> {
      const {
        ensureEnvironment,
        environmentsRootIn,
        checkManagedEnvironment,
        strongestFix,
        fixCommand,
        requireFreePorts,
        detectNvidiaGpus,
        precompilePython,
        LocalRuntime,
      } = await planning();
      const environment = await ensureEnvironment({
        paths: ctx.paths,
        env: ctx.env,
        onProgress: (progress) => ctx.emit(setupEvent(progress)),
      });
      const unsafe = unsafeStubPath({
        "state folder (TRITON_DEV_STATE_DIR)": ctx.paths.runsDir,
        "home (TRITON_DEV_HOME)": environment.backendDir,
        // A model's own environment is `source`d on that command line too.
        "model environments folder (TRITON_DEV_ENVS_DIR)": environmentsRootIn(ctx.paths.home, ctx.env),
      });
      if (unsafe) {
        throw new UserError(
          `the python backend cannot start models under ${JSON.stringify(unsafe.path)}: it starts each model's process through a shell with this path unquoted, and a space, a non-ASCII character or shell syntax in it breaks every load`,
          {
            hint: `Point the ${unsafe.what} at a folder whose path holds only letters, digits and '_', '-', '.', '/'.`,
          },
        );
      }
      // A package installed into the managed environment by hand (numpy 2) breaks models while
      // Triton still says READY: refused here, with the fix.
      const health = await checkManagedEnvironment(ctx.paths);
      const fix = strongestFix(health.problems);
      if (fix) {
        throw new UserError(
          `the managed environment no longer matches the python backend stub: ${health.problems.map((p) => p.problem).join("; ")}`,
          {
            hint: `Run \`${fixCommand(fix)}\`; a model's own packages go in a requirements.txt beside its config.pbtxt, never into the managed environment.`,
          },
        );
      }
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
    },
    attach(state: RunState, ctx): AttachedRun {
      const alive = async () => isOurProcess(state.pid, state.executable, deps.procRoot);
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
            ? await stopProcessGroup(state.pid, { graceMs, unloads: unloadWatch(state, onProgress, waitFor) })
            : undefined;
          return { what: `pid ${state.pid}`, staleWhat: `pid ${state.pid}`, json: {}, ...(outcome ? { outcome } : {}) };
        },
        async supervise() {
          const { loadEnvironment, precompilePython } = await planning();
          const environment = await loadEnvironment(ctx.paths);
          return {
            ...(environment
              ? {
                  prepareStaged: (dir: string) => precompilePython(environment, dir),
                  // The detached watcher has no screen: progress goes to its log (supervisor.log).
                  environments: await localModelEnvironments(environment, ctx.paths, ctx.env, (message) =>
                    log.info(message),
                  ),
                }
              : {}),
            stop: async () => {},
          };
        },
      };
    },
    doctor: async (ctx) => (await import("./doctor.js")).localChecks(ctx.paths, ctx.env),
    async cleanup(graceMs, ctx): Promise<Leftovers> {
      const orphans: number[] = [];
      const stubs: number[] = [];
      // Without the managed environment no server or stub of ours can run.
      const environment = await managedBinaries(ctx.paths);
      if (environment) {
        for (const pid of findOrphanServers(ctx.paths.runsDir, environment.serverBin, deps.procRoot)) {
          await stopProcessGroup(pid, { graceMs });
          orphans.push(pid);
        }
        // Stubs whose server is gone (it crashed), with the processes their model code started.
        for (const [pgid, pids] of findStubs(ctx.paths.runsDir, environment.stubBin, deps.procRoot)) {
          if (isOurProcess(pgid, environment.serverBin, deps.procRoot)) continue;
          if (await endLeftGroup(pgid, pids, graceMs, deps.procRoot)) stubs.push(...pids);
        }
      }
      return {
        json: { orphans, ...(stubs.length ? { orphanStubs: stubs } : {}) },
        lines: [
          ...(orphans.length
            ? [`stopped ${orphans.length} leftover tritonserver process(es) of ours: pid ${orphans.join(", ")}`]
            : []),
          ...(stubs.length
            ? [
                `stopped ${stubs.length} python model process(es) a crashed server of ours left: pid ${stubs.join(", ")}`,
              ]
            : []),
        ],
      };
    },
  };
}

export const localDriver = createLocalDriver();

/** The entry registry.ts loads for this runtime (`./local/driver.js`'s `driver`). */
export { localDriver as driver };
