import path from "node:path";
import { ServerStartError } from "../../errors.js";
import { detectNvidiaGpus } from "../../gpu/detect.js";
import { requireFreePorts } from "../../net/ports.js";
import { findProcesses, isOurProcess } from "../../state/process.js";
import type { RunState } from "../../state/run-state.js";
import type { AttachedRun, Leftovers, PlannedRun, RuntimeDriver } from "../driver.js";
import { refuseForeignFlags } from "../flags.js";
import { ensureEnvironment, loadEnvironment, precompilePython } from "./environment.js";
import { LocalRuntime, unloadWatch, type SpawnFn } from "./local-runtime.js";
import { stopProcessGroup } from "./process-group.js";

/** The local runtime takes no flags of its own. */
export type LocalOptions = Record<string, never>;

export interface LocalDeps {
  spawn?: SpawnFn;
  /** NVIDIA GPUs this machine shows (undefined: no nvidia-smi). */
  detectGpus?: () => Promise<number | undefined>;
  procRoot?: string;
}

/** Servers we started carry our runs folder in their --model-repository flag; nothing else is touched. */
export function findOrphanServers(runsDir: string, procRoot = "/proc"): number[] {
  const marker = `--model-repository=${runsDir}${path.sep}`;
  return findProcesses((argv) => argv[0]!.endsWith("tritonserver") && argv.some((a) => a.startsWith(marker)), procRoot);
}

/** Triton as a local process: the tritonserver binary of the nvidia-pytriton wheel in the managed environment. */
export function createLocalDriver(deps: LocalDeps = {}): RuntimeDriver<LocalOptions> {
  return {
    kind: "local",
    options(flags) {
      refuseForeignFlags("local", flags);
      return {};
    },
    async plan(input, _options, ctx): Promise<PlannedRun> {
      const environment = await ensureEnvironment({
        paths: ctx.paths,
        env: ctx.env,
        onProgress: (progress) => ctx.emit({ type: "setup", progress }),
      });
      await requireFreePorts(input.ports, input.host);
      const gpus = await (deps.detectGpus ?? detectNvidiaGpus)();
      return {
        gpus,
        gpuSkipReason: "it needs a GPU (KIND_GPU) and this machine has none",
        canDisableAutoComplete: true,
        // The stub's Python compiles each model.py once, here, so a load does not write a
        // __pycache__ into the served folder (poll mode would take it for a change).
        prepareStaged: (dir) => precompilePython(environment, dir),
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
          return { handle, executable: environment.serverBin, record: undefined };
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
        async stop(graceMs, onProgress) {
          if (await alive()) await stopProcessGroup(state.pid, { graceMs, unloads: unloadWatch(state, onProgress) });
          return { what: `pid ${state.pid}`, staleWhat: `pid ${state.pid}`, json: {} };
        },
        async supervise() {
          const environment = await loadEnvironment(ctx.paths);
          return {
            ...(environment ? { prepareStaged: (dir: string) => precompilePython(environment, dir) } : {}),
            stop: async () => {},
          };
        },
      };
    },
    async cleanup(graceMs, ctx): Promise<Leftovers> {
      const orphans: number[] = [];
      for (const pid of findOrphanServers(ctx.paths.runsDir, deps.procRoot)) {
        await stopProcessGroup(pid, { graceMs });
        orphans.push(pid);
      }
      return {
        json: { orphans },
        lines: orphans.length
          ? [`stopped ${orphans.length} leftover tritonserver process(es) of ours: pid ${orphans.join(", ")}`]
          : [],
      };
    },
  };
}

export const localDriver = createLocalDriver();
