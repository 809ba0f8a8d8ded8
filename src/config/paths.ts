import os from "node:os";
import path from "node:path";

/**
 * Where triton-dev keeps things. Two roots, because they live differently:
 * - home (cache): the managed Python environment and prepared backends; large, reused by every run.
 * - state: the current run's record, logs and staging repository; small, per machine user.
 * Tests point TRITON_DEV_STATE_DIR at a temp dir and keep sharing the (expensive) home.
 */
export interface Paths {
  home: string;
  venv: string;
  backends: string;
  envMarker: string;
  stateDir: string;
  runFile: string;
  runsDir: string;
}

export function resolvePaths(env: NodeJS.ProcessEnv = process.env, homedir: () => string = os.homedir): Paths {
  const home = env.TRITON_DEV_HOME
    ? path.resolve(env.TRITON_DEV_HOME)
    : path.join(env.XDG_CACHE_HOME ? path.resolve(env.XDG_CACHE_HOME) : path.join(homedir(), ".cache"), "triton-dev");
  const stateDir = env.TRITON_DEV_STATE_DIR ? path.resolve(env.TRITON_DEV_STATE_DIR) : path.join(home, "state");
  return {
    home,
    venv: path.join(home, "venv"),
    backends: path.join(home, "backends"),
    envMarker: path.join(home, "environment.json"),
    stateDir,
    runFile: path.join(stateDir, "run.json"),
    runsDir: path.join(stateDir, "runs"),
  };
}
