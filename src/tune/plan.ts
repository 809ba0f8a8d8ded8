import fsp from "node:fs/promises";
import path from "node:path";
import { UsageError, UserError } from "../errors.js";
import { log } from "../log/logger.js";
import { HttpControl } from "../perf/control.js";
import type { MeasuredRun, PerfDeps, PerfOptions } from "../perf/run.js";
import type { RunState } from "../state/run-state.js";
import type { ModelConfigSummary } from "../triton/grpc-client.js";
import { clientForRun } from "../triton/http-client.js";
import {
  applySpaceFile,
  readSpaceFile,
  candidateKey,
  defaultSpace,
  startingPoint,
  thisMachine,
  withStart,
  type Candidate,
  type SearchSpace,
} from "./space.js";
import type { TuneDeps, TuneOptions } from "./types.js";

const tlog = log.child("tune");

/** What every phase of a tune reads: the run, the model's two configs, the space, perf's settings. */
export interface TunePlan {
  state: RunState;
  /** The user's config.pbtxt (what --apply writes) and its text when tune started. */
  configFile: string;
  userText: string;
  /** The served copy, which every candidate's variant is edited from. */
  servedFile: string;
  servedText: string;
  space: SearchSpace;
  /** The user's config as a candidate, and its key. */
  start: Candidate;
  startKey: string;
  /** perf's options for every measurement, less the model and the level. */
  perfBase: Omit<PerfOptions, "model" | "levels">;
  perfDeps: PerfDeps;
}

async function liveRun(recorded: MeasuredRun): Promise<RunState> {
  const run = await recorded.find();
  if (!run)
    throw new UserError("nothing is running, so there is no server to tune on", {
      hint: "Start Triton with `triton-dev up --detach`; tune stages its candidates into the repository it serves.",
    });
  if (!run.alive)
    throw new UserError(`the recorded server (pid ${run.state.pid}) is no longer running`, {
      hint: "`triton-dev down` cleans up its record; start a new one with `triton-dev up`.",
    });
  return run.state;
}

async function readText(file: string, what: string): Promise<string> {
  try {
    return await fsp.readFile(file, "utf8");
  } catch (err) {
    throw new UserError(`cannot read ${file}, ${what}: ${(err as Error).message}`, {
      cause: err,
      hint: "Is the model part of the repository `triton-dev up` serves?",
    });
  }
}

/** The model's config as Triton serves it; refuses what tune cannot search. */
async function servedConfig(state: RunState, model: string): Promise<ModelConfigSummary> {
  const control = new HttpControl(clientForRun(state));
  let config: ModelConfigSummary;
  try {
    config = await control.modelConfig(model);
  } catch (err) {
    throw new UserError(`model '${model}' is not served by the running Triton`, {
      cause: err,
      hint: "`triton-dev status` lists its models and why any is not ready.",
    });
  } finally {
    control.close();
  }
  if (config.platform === "ensemble") {
    const steps = [...new Set((config.ensemble_scheduling?.step ?? []).map((s) => s.model_name))];
    throw new UsageError(
      `${model} is an ensemble: it has no batching or instances of its own to tune (Triton schedules its steps)`,
      {
        hint: `Tune the models its steps call, one at a time: ${steps.map((s) => `\`triton-dev tune ${s}\``).join(", ")}.`,
      },
    );
  }
  return config;
}

/**
 * The plan: the running server, the model's config as it serves it (an ensemble refused), the
 * user's and the served config's text, the search space (the machine's, narrowed by --space) with
 * the user's config in it, and perf's settings for every measurement.
 */
export async function planTune(o: TuneOptions, deps: TuneDeps): Promise<TunePlan> {
  const state = await liveRun(deps.run);
  const config = await servedConfig(state, o.model);
  const configFile = path.join(state.modelsDir, o.model, "config.pbtxt");
  const servedFile = path.join(state.repository, o.model, "config.pbtxt");
  const userText = await readText(configFile, `${o.model}'s config`);
  const servedText = await readText(servedFile, `the served copy of ${o.model}'s config`);

  let space = defaultSpace(config, deps.machine ?? thisMachine(state.gpus ?? 0));
  if (o.spaceFile) space = applySpaceFile(space, await readSpaceFile(o.spaceFile), o.spaceFile, config);
  const start = startingPoint(config, space.kind);
  space = withStart(space, start);

  const perfBase: Omit<PerfOptions, "model" | "levels"> = {
    protocol: o.protocol,
    kind: "concurrency",
    distribution: "constant",
    windowMs: o.windowMs,
    stabilityPct: o.stabilityPct,
    maxTrials: o.maxTrials,
    batchSize: 1,
    shapes: o.shapes ?? {},
    inputData: o.inputData ?? "random",
    ...(o.requestParameters ? { requestParameters: o.requestParameters } : {}),
    stringLength: 128,
    engine: "builtin",
    maxInFlight: 256,
    keepHistory: false,
  };
  const perfDeps: PerfDeps = {
    env: deps.env,
    run: deps.run,
    ...(deps.signal ? { signal: deps.signal } : {}),
    progress: (line: string) => tlog.debug(line),
  };
  return {
    state,
    configFile,
    userText,
    servedFile,
    servedText,
    space,
    start,
    startKey: candidateKey(start),
    perfBase,
    perfDeps,
  };
}
