/**
 * Triton agrees with lint: the models of agreement-cases.ts, loaded one by one into a real
 * tritonserver (2.51, the local runtime's) in explicit model-control mode through the repository
 * API, as a user's `load` would. Triton refuses each case lint says will not load, with the
 * message the case names, and loads each one lint accepts (agreement.test.ts checks lint's side).
 * It runs when a Triton virtual environment is present: the managed one `triton-dev setup` makes,
 * /tmp/ptv, or TRITON_DEV_AGREEMENT_VENV.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolvePaths } from "../../src/config/paths.js";
import type { LintResult } from "../../src/repo/lint.js";
import { createConfigCompleter, DEFAULT_COMPLETION_TIMEOUT_MS } from "../../src/repo/auto-complete-run.js";
import { contain } from "../../src/repo/model-code-sandbox.js";
import {
  AUTO_COMPLETE_CASES,
  CASES,
  type Case,
  SCAFFOLD,
  autoCompleteRepository,
  caseRepository,
} from "./agreement-cases.js";
import { removeTempRepos, summary, tempRepo } from "./helpers.js";
import { freePorts } from "../helpers/cli.js";

afterAll(removeTempRepos);

function findVenv(): string | undefined {
  const candidates = [process.env.TRITON_DEV_AGREEMENT_VENV, "/tmp/ptv", resolvePaths().venv].filter(
    (x): x is string => !!x,
  );
  return candidates.find((v) => fs.existsSync(v) && sitePackages(v) !== undefined);
}

function sitePackages(venv: string): string | undefined {
  const lib = path.join(venv, "lib");
  if (!fs.existsSync(lib)) return undefined;
  const py = fs.readdirSync(lib).find((d) => /^python3\.\d+$/.test(d));
  const sp = py && path.join(lib, py, "site-packages");
  return sp && fs.existsSync(path.join(sp, "pytriton/tritonserver/bin/tritonserver")) ? sp : undefined;
}

const venv = findVenv();
type Ports = Awaited<ReturnType<typeof freePorts>>;
/** Servers started, each on ports picked free just before (another file's server may take one meanwhile). */
const START_ATTEMPTS = 3;

/** Loads at once: the server loads concurrent requests in parallel, and python models take CPU time to start. */
const LOAD_CONCURRENCY = 4;

async function eachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: Math.min(limit, queue.length) }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await fn(item);
    }),
  );
}

interface Served {
  /** The answer of each model's load request: undefined when it loaded, else the error it gave. */
  loads: Map<string, string | undefined>;
  index: Array<{ name: string; state?: string; reason?: string }>;
  log: string;
  stop: () => Promise<void>;
}

/**
 * A tritonserver of the venv on a copy of `repo` (less the cases not served), in explicit mode,
 * with each of `models` loaded through the repository API, composing models before the ensembles
 * that run them (loading an ensemble would load them anyway, but then their answer would be the
 * ensemble's).
 */
async function serve(
  repo: string,
  lint: LintResult,
  cases: readonly Case[],
  models: readonly string[],
  { autoComplete }: { autoComplete: boolean },
): Promise<Served> {
  const sp = sitePackages(venv!)!;
  const ts = path.join(sp, "pytriton/tritonserver");
  const pyVersion = path.basename(path.dirname(sp)).replace("python", "");
  const served = await tempRepo();
  await fsp.cp(repo, served, { recursive: true });
  for (const c of cases) if (c.notServed) await fsp.rm(path.join(served, c.model), { recursive: true });
  const scratch = await tempRepo();
  const backends = path.join(scratch, "backends");
  await fsp.mkdir(path.join(backends, "python"), { recursive: true });
  for (const f of fs.readdirSync(path.join(ts, "backends/python"))) {
    if (f.endsWith(".py") || f.endsWith(".so"))
      await fsp.copyFile(path.join(ts, "backends/python", f), path.join(backends, "python", f));
  }
  await fsp.copyFile(
    path.join(ts, "python_backend_stubs", pyVersion, "triton_python_backend_stub"),
    path.join(backends, "python", "triton_python_backend_stub"),
  );
  await fsp.chmod(path.join(backends, "python", "triton_python_backend_stub"), 0o755);
  for (let attempt = 1; ; attempt++) {
    const ports = await freePorts();
    try {
      return await start(served, backends, scratch, lint, repo, models, { autoComplete, ports });
    } catch (err) {
      // A port taken between the pick and the server's bind: picked again, a bounded number of times.
      if (!(err instanceof PortTaken) || attempt >= START_ATTEMPTS) throw err;
    }
  }
}

class PortTaken extends Error {}

async function start(
  served: string,
  backends: string,
  scratch: string,
  lint: LintResult,
  repo: string,
  models: readonly string[],
  { autoComplete, ports }: { autoComplete: boolean; ports: Ports },
): Promise<Served> {
  const sp = sitePackages(venv!)!;
  const ts = path.join(sp, "pytriton/tritonserver");
  const logFile = path.join(scratch, `server-${ports.http}.log`);
  const logFd = fs.openSync(logFile, "w");
  const server = spawn(
    path.join(ts, "bin/tritonserver"),
    [
      `--model-repository=${served}`,
      `--backend-directory=${backends}`,
      "--model-control-mode=explicit",
      // As `up` starts it when no model defines auto_complete_config: the python backend's
      // auto-complete would only start a stub per model to call that function, a second per load,
      // while Triton's own completion (the backend from the model files) still runs. The
      // auto-complete cases get a server with it on, as `up` starts one for them.
      ...(autoComplete ? [] : ["--disable-auto-complete-config"]),
      `--http-port=${ports.http}`,
      `--grpc-port=${ports.grpc}`,
      `--metrics-port=${ports.metrics}`,
      "--http-address=127.0.0.1",
      "--grpc-address=127.0.0.1",
      "--metrics-address=127.0.0.1",
      "--exit-on-error=false",
    ],
    {
      env: {
        ...process.env,
        PATH: `${path.join(venv!, "bin")}:${process.env.PATH ?? ""}`,
        LD_LIBRARY_PATH: path.join(sp, "nvidia_pytriton.libs"),
      },
      stdio: ["ignore", logFd, logFd],
    },
  );
  fs.closeSync(logFd);
  const stop = async (): Promise<void> => {
    if (server.exitCode !== null) return;
    const exited = new Promise((r) => server.once("exit", r));
    server.kill("SIGTERM");
    const timer = setTimeout(() => server.kill("SIGKILL"), 15_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    return await loadAll(lint, repo, models, ports, logFile, stop, () => server.exitCode);
  } catch (err) {
    await stop(); // a server left behind would hold the ports of the next run
    const log = fs.readFileSync(logFile, "utf8");
    if (server.exitCode !== null && /Address already in use|failed to start .* service/i.test(log))
      throw new PortTaken(log.slice(-2000), { cause: err });
    throw err;
  }
}

async function loadAll(
  lint: LintResult,
  repo: string,
  models: readonly string[],
  ports: Ports,
  logFile: string,
  stop: () => Promise<void>,
  exitCode: () => number | null,
): Promise<Served> {
  const url = (p: string) => `http://127.0.0.1:${ports.http}${p}`;
  // In explicit mode the server starts with no model loaded; it is live once HTTP answers.
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exitCode() !== null)
      throw new Error(`tritonserver exited early:\n${fs.readFileSync(logFile, "utf8").slice(-3000)}`);
    const live = await fetch(url("/v2/health/live")).then(
      (r) => r.ok,
      () => false,
    );
    if (live) break;
    if (Date.now() > deadline) throw new Error("tritonserver did not answer within 60 s");
    await new Promise((r) => setTimeout(r, 250));
  }
  const loads = new Map<string, string | undefined>();
  const load = async (model: string): Promise<void> => {
    const res = await fetch(url(`/v2/repository/models/${model}/load`), {
      method: "POST",
      body: "{}",
      signal: AbortSignal.timeout(120_000),
    });
    loads.set(model, res.ok ? undefined : `HTTP ${res.status}: ${await res.text()}`);
  };
  const ensembles = new Set(
    lint.models.filter((m) => m.config?.platform === "ensemble" || m.config?.ensemble_scheduling).map((m) => m.name),
  );
  // Configs that do not parse, one at a time: protobuf's reason is an unnamed log line just
  // before Triton's own, and concurrent loads would interleave them.
  const unparsed = new Set(lint.models.filter((m) => !m.config).map((m) => m.name));
  const fileUnparsed = (m: string) => unparsed.has(m) && fs.existsSync(path.join(repo, m, "config.pbtxt"));
  await eachLimited(models.filter(fileUnparsed), 1, load);
  await eachLimited(
    models.filter((m) => !fileUnparsed(m) && !ensembles.has(m)),
    LOAD_CONCURRENCY,
    load,
  );
  await eachLimited(
    models.filter((m) => !fileUnparsed(m) && ensembles.has(m)),
    LOAD_CONCURRENCY,
    load,
  );
  const index = (await (
    await fetch(url("/v2/repository/index"), { method: "POST", body: "{}" })
  ).json()) as Served["index"];
  return { loads, index, log: fs.readFileSync(logFile, "utf8"), stop };
}

/**
 * What Triton said about a model: its load answer, its index reason and the log lines naming it (a parse error's
 * line precedes its own).
 */
function said(s: Served, model: string): string {
  const lines = s.log.split("\n");
  const out = [s.loads.get(model) ?? "", s.index.find((m) => m.name === model)?.reason ?? ""];
  lines.forEach((l, i) => {
    if (!new RegExp(`\\b${model}\\b`).test(l)) return;
    out.push(l);
    if (l.includes("failed to read text proto") && lines[i - 1]?.includes("libprotobuf")) out.push(lines[i - 1]!);
  });
  return out.join("\n");
}

function agreementTests(get: () => Served, cases: readonly Case[], extraLoaded: readonly string[] = []): void {
  it.each(cases.filter((c) => c.triton).map((c) => [c.model, c.triton!]))(
    "Triton refuses to load %s: %s",
    (model, message) => {
      const s = get();
      expect(s.loads.has(model), `${model} was not loaded`).toBe(true);
      expect(s.loads.get(model), said(s, model)).toBeDefined();
      expect(s.index.find((m) => m.name === model)?.state).not.toBe("READY");
      expect(said(s, model)).toContain(message);
    },
  );

  it.each([...cases.filter((c) => c.lint === "accepted").map((c) => c.model), ...extraLoaded])(
    "Triton loads %s",
    (model) => {
      const s = get();
      expect(s.loads.has(model), `${model} was not loaded`).toBe(true);
      expect(s.loads.get(model), said(s, model)).toBeUndefined();
      expect(
        s.index.find((m) => m.name === model),
        said(s, model),
      ).toMatchObject({ state: "READY" });
    },
  );
}

describe("lint agrees with Triton", () => {
  let repo = "";
  let lint: LintResult;
  let served: Served | undefined;

  beforeAll(async () => {
    ({ repo, lint } = await caseRepository());
  });

  describe.skipIf(!venv)("against a real tritonserver in explicit mode", () => {
    beforeAll(async () => {
      const toLoad = [...CASES.filter((c) => !c.notServed).map((c) => c.model), SCAFFOLD];
      served = await serve(repo, lint, CASES, toLoad, { autoComplete: false });
    }, 240_000);
    afterAll(() => served?.stop(), 30_000);
    agreementTests(() => served!, CASES, [SCAFFOLD]);
  });
});

/**
 * Lint's time limit for auto_complete_config here: its default. Lint runs every model's at once,
 * so the limit holds about ten python processes importing numpy together; 3 s (once chosen to
 * keep the hang case quick) was less than that takes with another process on one of two cores,
 * and a model that completes then read as a timeout. The hang case waits it out once.
 */
const COMPLETION_TIMEOUT_MS = DEFAULT_COMPLETION_TIMEOUT_MS;

describe.skipIf(!venv)("lint agrees with Triton on models that complete their own config", () => {
  let lint: LintResult;
  let served: Served | undefined;

  beforeAll(async () => {
    let repo: string;
    ({ repo, lint } = await autoCompleteRepository(createConfigCompleter({ timeoutMs: COMPLETION_TIMEOUT_MS })));
    const toLoad = AUTO_COMPLETE_CASES.filter((c) => !c.notServed).map((c) => c.model);
    served = await serve(repo, lint, AUTO_COMPLETE_CASES, toLoad, { autoComplete: true });
  }, 300_000);
  afterAll(() => served?.stop(), 30_000);

  const linted = (model: string) => {
    const m = lint.models.find((x) => x.name === model);
    if (!m) throw new Error(`lint did not report model ${model}`);
    return m;
  };

  it.each(AUTO_COMPLETE_CASES.filter((c) => c.lint !== "accepted").map((c) => [c.model, c.lint, c.at ?? "1/model.py"]))(
    "lint says %s will not load: %s, pointing at %s",
    (model, code, at) => {
      const m = linted(model);
      expect(m.wouldLoad, summary(m.diagnostics).join("\n")).toBe(false);
      const found = m.diagnostics.filter((d) => d.code === code && d.severity === "error");
      expect(found, summary(m.diagnostics).join("\n")).not.toEqual([]);
      expect(found[0]!.file).toBe(path.join(m.dir, at));
    },
  );

  it.each(AUTO_COMPLETE_CASES.filter((c) => c.lint === "accepted").map((c) => c.model))(
    "lint finds no error in %s, checks the completed config and counts it as loading",
    (model) => {
      const m = linted(model);
      expect(summary(m.diagnostics.filter((d) => d.severity === "error"))).toEqual([]);
      expect(m.wouldLoad, m.unavailable).toBe(true);
      expect(m.completed).toBe(true);
      expect(m.config?.input?.map((i) => i.name)).toEqual(["INPUT0"]);
    },
  );

  it("lints the repository again from the cache, running no model code", async () => {
    // Asked only when a model.py is about to run: a count of its calls is a count of processes.
    let ran = 0;
    const inner = createConfigCompleter({
      timeoutMs: COMPLETION_TIMEOUT_MS,
      contain: (req) => {
        ran++;
        return contain(req);
      },
    });
    const again = await autoCompleteRepository({
      // A timeout is not cached (a slow machine may finish next time): said at once here.
      complete: (req) =>
        req.model === "ac_hangs"
          ? Promise.resolve({ outcome: "timeout", seconds: COMPLETION_TIMEOUT_MS / 1000 })
          : inner.complete(req),
    });
    expect(again.lint.models.map((m) => `${m.name}: ${m.wouldLoad}`)).toEqual(
      lint.models.map((m) => `${m.name}: ${m.wouldLoad}`),
    );
    // Every outcome came from the cache: no model.py was run again.
    expect(ran).toBe(0);
  });

  agreementTests(() => served!, AUTO_COMPLETE_CASES);
});
