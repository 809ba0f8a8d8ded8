import fs from "node:fs";
import { spawn, type ChildProcess } from "node:child_process";
import { REAL_CLOCK, type Clock } from "../../clock.js";
import { log as rootLog } from "../../log/logger.js";
import { endpointsFor } from "../../net/url.js";
import { keyArg, localKeyShimEnv } from "../../triton/key-shim.js";
import { serverArgs } from "../../triton/server-args.js";
import type { ServerHandle, StartOptions, StopOutcome } from "../driver.js";
import type { LocalEnvironment } from "./environment.js";
import { stopProcessGroup, unloadWatch } from "./process-group.js";

const log = rootLog.child("local");

export type SpawnFn = typeof spawn;

/** The tritonserver command line for a run; kept separate so it can be unit-tested. */
export function localServerArgs(env: Pick<LocalEnvironment, "backendDir">, o: StartOptions): string[] {
  return serverArgs({
    repository: o.repository,
    backendDir: env.backendDir,
    reload: o.reload,
    pollSecs: o.pollSecs,
    listen: { host: o.host, ports: o.ports },
    repositoryKey: keyArg(o.repositoryKey.header),
    logInfo: true,
    exitTimeoutSecs: 10,
    ...(o.autoCompleteConfig === false ? { autoCompleteConfig: false } : {}),
  });
}

export function serverEnv(
  e: LocalEnvironment,
  base: NodeJS.ProcessEnv,
  key?: Pick<StartOptions["repositoryKey"], "dir">,
): NodeJS.ProcessEnv {
  const ld = [...e.libDirs, base.LD_LIBRARY_PATH].filter(Boolean).join(":");
  return {
    ...base,
    ...(key ? localKeyShimEnv(key.dir, { ...base, LD_LIBRARY_PATH: ld }) : { LD_LIBRARY_PATH: ld }),
    // The stub embeds the venv's Python and finds numpy through the venv on PATH.
    PATH: [`${e.venv}/bin`, base.PATH].filter(Boolean).join(":"),
    VIRTUAL_ENV: e.venv,
    // A __pycache__ written into the served repository bumps its mtime and makes poll mode
    // reload the model a second time right after it loaded.
    PYTHONDONTWRITEBYTECODE: "1",
  };
}

export interface LocalRuntimeOptions {
  environment: LocalEnvironment;
  env?: NodeJS.ProcessEnv;
  spawn?: SpawnFn;
  /** The time the stop's grace and kill waits run on (../../clock.ts). */
  clock?: Clock;
}

/** Triton as a local process: the tritonserver binary of the nvidia-pytriton wheel. */
export class LocalRuntime {
  private readonly environment: LocalEnvironment;
  private readonly env: NodeJS.ProcessEnv;
  private readonly spawnFn: SpawnFn;
  private readonly clock: Clock;

  constructor(options: LocalRuntimeOptions) {
    this.environment = options.environment;
    this.env = options.env ?? process.env;
    this.spawnFn = options.spawn ?? spawn;
    this.clock = options.clock ?? REAL_CLOCK;
  }

  async start(o: StartOptions): Promise<ServerHandle> {
    const args = localServerArgs(this.environment, o);
    log.debug("starting tritonserver", { bin: this.environment.serverBin, args });
    const logFd = fs.openSync(o.logFile, "a");
    let child: ChildProcess;
    try {
      // detached: its own process group, so the stubs it spawns are stopped with it and the
      // server outlives this CLI when the run is detached. Output goes straight to the log file.
      child = this.spawnFn(this.environment.serverBin, args, {
        cwd: o.runDir,
        env: serverEnv(this.environment, this.env, o.repositoryKey),
        detached: true,
        stdio: ["ignore", logFd, logFd],
      });
    } finally {
      fs.closeSync(logFd);
    }
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.once("exit", (code, signal) => resolve({ code, signal }));
      child.once("error", (err) => {
        log.error("could not start tritonserver", { error: err.message });
        resolve({ code: 127, signal: null });
      });
    });
    const pid = child.pid;
    let stopping: Promise<StopOutcome | undefined> | undefined;
    return {
      pid,
      endpoints: endpointsFor(o.host, o.ports),
      exited,
      release: () => child.unref(),
      stop: (graceMs = 15_000, onProgress, waitFor) => {
        stopping ??=
          pid === undefined
            ? Promise.resolve(undefined)
            : stopProcessGroup(pid, {
                graceMs,
                exited,
                unloads: unloadWatch(o, onProgress, waitFor),
                clock: this.clock,
              });
        return stopping;
      },
    };
  }
}
