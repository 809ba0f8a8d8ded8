import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { REAL_CLOCK, type Clock } from "../clock.js";
import { resolvePaths, type Paths } from "../config/paths.js";
import { log } from "../log/logger.js";
import { hashModelDir } from "./model-files.js";
import {
  CANNOT_WALL_IN,
  CONTAIN_PREFIX,
  contain as containCommand,
  launcherRefusal,
  limitsFrom,
  ModelCodeIsolationError,
  NON_DUMPABLE_PRELUDE,
  type Contained,
  type ContainRequest,
} from "./model-code-sandbox.js";

const logger = log.child("repo");

/**
 * Runs a python model's `auto_complete_config` the way the python backend's stub does when Triton
 * loads it with config auto-complete on: model.py imported as `<version>.model` with the model
 * folder, the version folder and the backend's own folder on sys.path, the backend's real
 * `triton_python_backend_utils.py` (its ModelConfig, whose checks are the backend's), the class
 * method called with a ModelConfig of the config Triton has so far, and its answer required to be
 * a ModelConfig. The stub's C++ half (`c_python_backend_utils`: Tensor, InferenceResponse,
 * Logger, ...) is not loadable outside the stub, so the script puts placeholders in its place:
 * model code may name them at import time, and Logger writes to stderr.
 */
const DRIVER =
  NON_DUMPABLE_PRELUDE +
  String.raw`
import json, os, sys, traceback, types
utils_dir, model_file = sys.argv[1], sys.argv[2]
version_dir = os.path.dirname(model_file)
model_dir = os.path.dirname(version_dir)
config_text = sys.stdin.read()
out = os.fdopen(3, "w")
def answer(**kw):
    out.write(json.dumps(kw))
    out.flush()
    sys.exit(0)
c = types.ModuleType("c_python_backend_utils")
class _Unavailable:
    def __init__(self, *a, **k):
        raise RuntimeError("not available while Triton completes the config")
class TritonError(Exception):
    pass
class TritonModelException(Exception):
    pass
class Logger:
    @staticmethod
    def log(msg, level=None):
        print(msg, file=sys.stderr)
    log_info = log_warn = log_error = log_verbose = log
for n in ["Tensor", "InferenceRequest", "InferenceResponse", "MetricFamily", "Metric", "ResponseSender"]:
    setattr(c, n, type(n, (_Unavailable,), {}))
c.TritonError = TritonError
c.TritonModelException = TritonModelException
c.Logger = Logger
sys.modules["c_python_backend_utils"] = c
sys.path.extend([model_dir, version_dir, utils_dir])
import triton_python_backend_utils as pb_utils
for n in dir(c):
    if not n.startswith("_") and not hasattr(pb_utils, n):
        setattr(pb_utils, n, getattr(c, n))
def where(tb):
    frames = [f for f in traceback.extract_tb(tb) if os.path.abspath(f.filename).startswith(model_dir + os.sep)]
    return (os.path.relpath(frames[-1].filename, model_dir), frames[-1].lineno) if frames else (None, None)
try:
    import importlib
    module = importlib.import_module(os.path.basename(version_dir) + "." + os.path.basename(model_file)[:-3])
    cls = getattr(module, "TritonPythonModel")
except BaseException as e:
    f, l = where(e.__traceback__)
    answer(outcome="import", error=type(e).__name__ + ": " + str(e), file=f, line=l, trace=traceback.format_exc()[-4000:])
if not hasattr(cls, "auto_complete_config"):
    answer(outcome="absent")
config = pb_utils.ModelConfig(config_text)
try:
    result = cls.auto_complete_config(config)
except BaseException as e:
    f, l = where(e.__traceback__)
    answer(outcome="raised", error=type(e).__name__ + ": " + str(e), file=f, line=l, trace=traceback.format_exc()[-4000:])
if not isinstance(result, pb_utils.ModelConfig):
    answer(outcome="invalid", error="it must return a pb_utils.ModelConfig object (Triton: \"must return a valid pb.ModelConfig object\"), and returned " + type(result).__name__)
try:
    answer(outcome="completed", config=result._model_config)
except (TypeError, ValueError) as e:
    answer(outcome="invalid", error="the completed config is not JSON: " + str(e))
`;

export interface CompletionRequest {
  model: string;
  /** Absolute path of the model folder. */
  dir: string;
  /** The model file the stub imports (`<dir>/<version>/model.py`). */
  file: string;
  /** The config as Triton hands it to the backend: Triton's JSON form with every field written out. */
  config: Record<string, unknown>;
}

/**
 * What running `auto_complete_config` came to. `file`/`line`: where in the model's code it failed
 * (the driver's answer is relative to the model folder; the cache keeps it so).
 */
export type CompletionOutcome =
  | { outcome: "completed"; config: Record<string, unknown> }
  /** The class has no auto_complete_config after all (only a mention of the name): nothing to complete. */
  | { outcome: "absent" }
  | { outcome: "import" | "raised"; error: string; file?: string; line?: number; trace?: string }
  | { outcome: "invalid"; error: string }
  | { outcome: "timeout"; seconds: number }
  /** Not run here at all (no managed environment, the model's environment not built): said as a note. */
  | { outcome: "not-run"; why: string }
  /** Not run because it cannot be walled in here (ModelCodeIsolationError): `why` a clause, `hint` what to do. */
  | { outcome: "refused"; why: string; hint: string };

export interface ConfigCompleter {
  complete(req: CompletionRequest): Promise<CompletionOutcome>;
}

/** The interpreter to run a model's code with: the managed one, or its requirements.txt environment's. */
export type InterpreterFor = (
  model: string,
  dir: string,
) => Promise<{ python: string } | { notRun: string } | undefined>;

export interface CompleterOptions {
  paths?: Paths;
  /** The managed environment's Python (default: `<home>/venv/bin/python`). */
  python?: string;
  /** The folder holding the python backend's triton_python_backend_utils.py (default: the managed wheel's). */
  utilsDir?: string;
  /** How long model.py may take to import and complete; past it the process group is killed. */
  timeoutMs?: number;
  /** A model with a requirements.txt runs in its environment; absent: such models are not run. */
  interpreterFor?: InterpreterFor;
  /** Where finished outcomes are kept by the model's content hash (default: `<home>/cache/auto-complete`). */
  cacheDir?: string;
  /** Wraps the run in its walls (model-code-sandbox.ts); called once for each model.py that runs. */
  contain?: (req: ContainRequest) => Promise<Contained>;
  /**
   * Where the walls cannot be had: "outcome" answers `refused` (lint says so as a warning: `up`,
   * which runs the code in Triton anyway), "throw" throws the ModelCodeIsolationError (`lint
   * --run-model-code`, whose user asked for the code to run).
   */
  refuse?: "outcome" | "throw";
  /** The time the time limit and the kill and pipe graces run on (../clock.ts). */
  clock?: Clock;
}

/** Part of the cache key: an outcome reached with other walls (or none) is not this one. */
const CONTAINMENT_GENERATION = "pivot-root-1";

export const DEFAULT_COMPLETION_TIMEOUT_MS = 10_000;
/** The driver's answer and model.py's own output are cut here: a model printing forever is not our memory's problem. */
const MAX_OUTPUT = 1 << 20;

/** The python backend's utils in the managed wheel (site-packages/pytriton/tritonserver/backends/python). */
function managedUtilsDir(venv: string): string | undefined {
  const lib = path.join(venv, "lib");
  const py = fs.existsSync(lib) ? fs.readdirSync(lib).find((d) => /^python3\.\d+$/.test(d)) : undefined;
  const dir = py && path.join(lib, py, "site-packages/pytriton/tritonserver/backends/python");
  return dir && fs.existsSync(path.join(dir, "triton_python_backend_utils.py")) ? dir : undefined;
}

/**
 * The completer lint uses: model code runs in a subprocess of the managed environment's Python,
 * with a time limit, contained (model-code-sandbox.ts: no network, every process it starts killed
 * at the end, memory and process counts limited, the filesystem read-only outside a scratch
 * folder where the platform allows). It writes no bytecode into the user's folder. Outcomes
 * other than a timeout are cached by the model's content hash and the config handed in, in memory
 * and on disk, so a repeated lint or reload of an unchanged model spawns nothing.
 */
export function createConfigCompleter(o: CompleterOptions = {}): ConfigCompleter {
  const paths = o.paths ?? resolvePaths();
  const python = o.python ?? path.join(paths.venv, "bin", "python");
  const timeoutMs = o.timeoutMs ?? DEFAULT_COMPLETION_TIMEOUT_MS;
  const cacheDir = o.cacheDir ?? path.join(paths.home, "cache", "auto-complete");
  const memory = new Map<string, CompletionOutcome>();
  const wrap = o.contain ?? containCommand;

  return {
    async complete(req) {
      const utilsDir = o.utilsDir ?? managedUtilsDir(paths.venv);
      if (!utilsDir || !fs.existsSync(python))
        return { outcome: "not-run", why: "the managed environment is not set up (run `triton-dev setup`)" };
      let interpreter = python;
      if (fs.existsSync(path.join(req.dir, "requirements.txt"))) {
        const chosen = o.interpreterFor
          ? await o.interpreterFor(req.model, req.dir)
          : { notRun: "environment not built" };
        if (chosen && "notRun" in chosen) return { outcome: "not-run", why: chosen.notRun };
        if (chosen) interpreter = chosen.python;
      }
      const hash = await hashModelDir(req.dir, req.model);
      const key = hash
        ? createHash("sha1")
            // The limits too: code that ran out of memory may complete with more.
            .update(`${hash}\n${interpreter}\n${timeoutMs}\n${path.relative(req.dir, req.file)}\n`)
            .update(
              `${CONTAINMENT_GENERATION}\n${process.env.TRITON_DEV_MODEL_CODE_CONTAINMENT === "plain" ? "plain" : "walls"}\n`,
            )
            .update(`${JSON.stringify(limitsFrom())}\n`)
            .update(JSON.stringify(req.config))
            .digest("hex")
        : undefined;
      if (key) {
        const known = memory.get(key) ?? (await readCached(cacheDir, key));
        if (known) {
          memory.set(key, known);
          return inModel(known, req.dir);
        }
      }
      const started = Date.now();
      const refused = (err: ModelCodeIsolationError): CompletionOutcome => {
        if (o.refuse === "throw") throw err;
        return { outcome: "refused", why: err.reason, hint: err.hint ?? "" };
      };
      let contained: Contained;
      try {
        contained = await wrap({
          launcherPython: python,
          argv: [interpreter, "-B", "-c", DRIVER, utilsDir, req.file],
          // What the driver reads, and all it sees: the model, the backend's utils, its
          // interpreter's environment and the managed one, which a requirements.txt environment
          // loads after its own.
          keep: [req.dir, utilsDir, path.dirname(path.dirname(interpreter)), paths.venv],
          readable: [req.dir, req.file, utilsDir],
        });
      } catch (err) {
        if (err instanceof ModelCodeIsolationError) return refused(err);
        throw err;
      }
      let outcome: CompletionOutcome;
      try {
        outcome = await runDriver(contained, req, timeoutMs, o.clock ?? REAL_CLOCK);
      } finally {
        await contained.cleanup();
      }
      if (outcome.outcome === "refused" && o.refuse === "throw")
        throw new ModelCodeIsolationError(outcome.why, outcome.hint);
      logger.debug("ran auto_complete_config", {
        model: req.model,
        containment: contained.mode,
        outcome: outcome.outcome,
        ms: Date.now() - started,
      });
      if (key && outcome.outcome !== "timeout" && outcome.outcome !== "not-run" && outcome.outcome !== "refused") {
        memory.set(key, outcome);
        await writeCached(cacheDir, key, outcome);
      }
      return inModel(outcome, req.dir);
    },
  };
}

let shared: ConfigCompleter | undefined;

/**
 * One completer for the process, for the callers that serve the model and so run its code in
 * Triton anyway (`up`, the reload controller, perf and tune's variants): lint runs none unless asked.
 */
export function sharedConfigCompleter(): ConfigCompleter {
  shared ??= createConfigCompleter();
  return shared;
}

/** The outcome with its file (relative to the model folder, as run and cached) made absolute. */
function inModel(o: CompletionOutcome, dir: string): CompletionOutcome {
  return (o.outcome === "import" || o.outcome === "raised") && o.file ? { ...o, file: path.join(dir, o.file) } : o;
}

/**
 * The cache folder, made 0700 where it is missing, or taken as it is only when it is a folder of
 * ours that nobody else can write or read (an older one's looser mode is tightened); anything
 * else (a link, another user's folder) is not used: the cache only saves time.
 */
async function cacheFolder(dir: string): Promise<string | undefined> {
  try {
    await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
    const st = await fsp.lstat(dir);
    const uid = typeof process.getuid === "function" ? process.getuid() : st.uid;
    if (!st.isDirectory() || st.uid !== uid) {
      logger.warn("auto-complete cache not used: not a folder of this user's", { dir });
      return undefined;
    }
    if ((st.mode & 0o077) !== 0) {
      const handle = await fsp.open(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW);
      try {
        await handle.chmod(0o700);
      } finally {
        await handle.close();
      }
    }
    return dir;
  } catch (err) {
    logger.debug("auto-complete cache not usable", { dir, error: String(err) });
    return undefined;
  }
}

async function readCached(dir: string, key: string): Promise<CompletionOutcome | undefined> {
  const folder = await cacheFolder(dir);
  if (!folder) return undefined;
  let text: string;
  try {
    const handle = await fsp.open(
      path.join(folder, `${key}.json`),
      fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK,
    );
    try {
      const st = await handle.stat();
      const uid = typeof process.getuid === "function" ? process.getuid() : st.uid;
      // What another user could have put there is not an outcome of ours.
      if (!st.isFile() || st.uid !== uid || st.size > MAX_OUTPUT * 2) return undefined;
      if ((st.mode & 0o077) !== 0) await handle.chmod(0o600);
      text = await handle.readFile("utf8");
    } finally {
      await handle.close();
    }
  } catch {
    return undefined;
  }
  try {
    return JSON.parse(text) as CompletionOutcome;
  } catch {
    return undefined; // a torn write: run it again
  }
}

async function writeCached(dir: string, key: string, outcome: CompletionOutcome): Promise<void> {
  // A cache that cannot be written only costs the next run its time.
  const folder = await cacheFolder(dir);
  if (!folder) return;
  const tmp = path.join(folder, `.${key}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
  try {
    const handle = await fsp.open(
      tmp,
      fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW,
      0o600,
    );
    try {
      await handle.chmod(0o600); // whatever the umask
      await handle.writeFile(JSON.stringify(outcome));
    } finally {
      await handle.close();
    }
    await fsp.rename(tmp, path.join(folder, `${key}.json`));
  } catch (err) {
    await fsp.rm(tmp, { force: true }).catch(() => {});
    logger.debug("auto-complete cache not written", { dir, error: String(err) });
  }
}

function runDriver(
  contained: Contained,
  req: CompletionRequest,
  timeoutMs: number,
  clock: Clock,
): Promise<CompletionOutcome> {
  const closedPort = "http://127.0.0.1:9";
  const env: NodeJS.ProcessEnv = {
    ...contained.env,
    PYTHONDONTWRITEBYTECODE: "1",
    PYTHONNOUSERSITE: "1",
    // Without a network namespace, what honours the proxy variables (pip, requests) finds nothing.
    ...(contained.mode !== "plain"
      ? {}
      : {
          http_proxy: closedPort,
          https_proxy: closedPort,
          HTTP_PROXY: closedPort,
          HTTPS_PROXY: closedPort,
          no_proxy: "",
          NO_PROXY: "",
        }),
  };
  const cmd = contained.command;
  return new Promise((resolve) => {
    const child = spawn(cmd, contained.args, {
      cwd: contained.cwd,
      env,
      detached: true,
      stdio: ["pipe", "ignore", "pipe", "pipe"],
    });
    let answer = "";
    let stderr = "";
    let timedOut = false;
    let killer: unknown;
    const timer = clock.setTimeout(() => {
      timedOut = true;
      const killGroup = () => {
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          child.kill("SIGKILL");
        }
      };
      // A PID namespace dies with `unshare` (--kill-child) and everything in it; without one the
      // launcher kills what the model started when asked, and the group goes after a grace.
      if (contained.mode === "namespaces") return killGroup();
      child.kill("SIGTERM");
      killer = clock.setTimeout(killGroup, 2000);
    }, timeoutMs);
    child.stdio[3]!.on("data", (d: Buffer) => {
      if (answer.length < MAX_OUTPUT) answer += d.toString("utf8");
    });
    child.stderr!.on("data", (d: Buffer) => {
      if (stderr.length < MAX_OUTPUT) stderr += d.toString("utf8");
    });
    child.stdin!.on("error", () => {}); // a model that exits at import closes its stdin early
    child.stdin!.end(JSON.stringify(req.config));
    child.on("error", (err) => {
      clock.clearTimeout(timer);
      resolve({ outcome: "not-run", why: `cannot start ${cmd}: ${err.message}` });
    });
    // What the model started outside the group (a new session, where no PID namespace holds it)
    // may keep our pipes open after the driver exits: its answer is in by then, so the pipes are
    // closed after a grace instead of waited for.
    let drained: unknown;
    child.on("exit", () => {
      drained = clock.setTimeout(
        () => {
          child.stdio[3]?.destroy();
          child.stderr?.destroy();
        },
        2000,
        { unref: true },
      );
    });
    child.on("close", (code, signal) => {
      clock.clearTimeout(timer);
      clock.clearTimeout(killer);
      clock.clearTimeout(drained);
      if (timedOut) return resolve({ outcome: "timeout", seconds: timeoutMs / 1000 });
      try {
        const a = JSON.parse(answer) as Record<string, unknown>;
        // The driver names the file relative to the model (cached outcomes outlive a folder's path).
        const at = {
          ...(typeof a.file === "string" ? { file: a.file } : {}),
          ...(typeof a.line === "number" ? { line: a.line } : {}),
          ...(typeof a.trace === "string" ? { trace: a.trace } : {}),
        };
        switch (a.outcome) {
          case "completed":
            return resolve({ outcome: "completed", config: a.config as Record<string, unknown> });
          case "absent":
            return resolve({ outcome: "absent" });
          case "import":
          case "raised":
            return resolve({ outcome: a.outcome, error: String(a.error), ...at });
          case "invalid":
            return resolve({ outcome: "invalid", error: String(a.error) });
        }
      } catch {
        // no answer: the process died on its own (os._exit, a crash); said below
      }
      const all = stderr.trim().split("\n");
      const walls = all.filter((l) => l.startsWith(CONTAIN_PREFIX));
      if (code === CANNOT_WALL_IN) {
        const err = launcherRefusal(walls.map((l) => l.slice(CONTAIN_PREFIX.length).trim()));
        return resolve({ outcome: "refused", why: err.reason, hint: err.hint ?? "" });
      }
      if (walls.length) logger.warn("model code containment", { model: req.model, said: walls.join("; ") });
      const tail = all
        .filter((l) => !l.startsWith(CONTAIN_PREFIX))
        .slice(-5)
        .join("\n");
      resolve({
        outcome: "raised",
        error: `the process ended (${signal ? `signal ${signal}` : `exit code ${code}`}) before auto_complete_config returned${tail ? `: ${tail}` : ""}`,
      });
    });
  });
}
