/**
 * Triton agrees with lint: the models of agreement-cases.ts, loaded one by one into a real
 * tritonserver (2.51, the local runtime's) in explicit model-control mode through the repository
 * API, as a user's `load` would. Triton refuses each case lint says will not load, with the
 * message the case names, and loads each one lint accepts (agreement.test.ts checks lint's side).
 * It runs when a Triton virtual environment is present: the managed one `triton-dev setup` makes,
 * /tmp/ptv, or TRITON_DEV_AGREEMENT_VENV.
 */
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolvePaths } from "../../src/config/paths.js";
import type { LintResult } from "../../src/repo/lint.js";
import { CASES, SCAFFOLD, caseRepository } from "./agreement-cases.js";
import { removeTempRepos, tempRepo } from "./helpers.js";

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
const PORTS = { http: 19000, grpc: 19001, metrics: 19002 };

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

describe("lint agrees with Triton", () => {
  let repo = "";
  let lint: LintResult;
  let server: ChildProcess | undefined;
  /** The answer of each model's load request: undefined when it loaded, else the error it gave. */
  const loads = new Map<string, string | undefined>();
  let index: Array<{ name: string; state?: string; reason?: string }> = [];
  let log = "";

  beforeAll(async () => {
    ({ repo, lint } = await caseRepository());
  });

  describe.skipIf(!venv)("against a real tritonserver in explicit mode", () => {
    beforeAll(async () => {
      const sp = sitePackages(venv!)!;
      const ts = path.join(sp, "pytriton/tritonserver");
      const pyVersion = path.basename(path.dirname(sp)).replace("python", "");
      const served = await tempRepo();
      await fsp.cp(repo, served, { recursive: true });
      for (const c of CASES) if (c.notServed) await fsp.rm(path.join(served, c.model), { recursive: true });
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
      const logFile = path.join(scratch, "server.log");
      const logFd = fs.openSync(logFile, "w");
      server = spawn(
        path.join(ts, "bin/tritonserver"),
        [
          `--model-repository=${served}`,
          `--backend-directory=${backends}`,
          "--model-control-mode=explicit",
          // As `up` starts it when no model defines auto_complete_config (none here does): the
          // python backend's auto-complete would only start a stub per model to call that function,
          // a second per load, while Triton's own completion (the backend from the model files)
          // still runs.
          "--disable-auto-complete-config",
          `--http-port=${PORTS.http}`,
          `--grpc-port=${PORTS.grpc}`,
          `--metrics-port=${PORTS.metrics}`,
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
      const url = (p: string) => `http://127.0.0.1:${PORTS.http}${p}`;
      // In explicit mode the server starts with no model loaded; it is live once HTTP answers.
      const deadline = Date.now() + 60_000;
      for (;;) {
        if (server.exitCode !== null)
          throw new Error(`tritonserver exited early:\n${fs.readFileSync(logFile, "utf8").slice(-3000)}`);
        const live = await fetch(url("/v2/health/live")).then(
          (r) => r.ok,
          () => false,
        );
        if (live) break;
        if (Date.now() > deadline) throw new Error("tritonserver did not answer within 60 s");
        await new Promise((r) => setTimeout(r, 250));
      }
      const load = async (model: string): Promise<void> => {
        const res = await fetch(url(`/v2/repository/models/${model}/load`), {
          method: "POST",
          body: "{}",
          signal: AbortSignal.timeout(120_000),
        });
        loads.set(model, res.ok ? undefined : `HTTP ${res.status}: ${await res.text()}`);
      };
      // Each case through the repository API, composing models before the ensembles that run them
      // (loading an ensemble would load them anyway, but then their answer would be the ensemble's).
      const toLoad = [...CASES.filter((c) => !c.notServed).map((c) => c.model), SCAFFOLD];
      const ensembles = new Set(
        lint.models
          .filter((m) => m.config?.platform === "ensemble" || m.config?.ensemble_scheduling)
          .map((m) => m.name),
      );
      // Configs that do not parse, one at a time: protobuf's reason is an unnamed log line just
      // before Triton's own, and concurrent loads would interleave them.
      const unparsed = new Set(lint.models.filter((m) => !m.config).map((m) => m.name));
      await eachLimited(
        toLoad.filter((m) => unparsed.has(m)),
        1,
        load,
      );
      await eachLimited(
        toLoad.filter((m) => !unparsed.has(m) && !ensembles.has(m)),
        LOAD_CONCURRENCY,
        load,
      );
      await eachLimited(
        toLoad.filter((m) => !unparsed.has(m) && ensembles.has(m)),
        LOAD_CONCURRENCY,
        load,
      );
      index = (await (await fetch(url("/v2/repository/index"), { method: "POST", body: "{}" })).json()) as typeof index;
      log = fs.readFileSync(logFile, "utf8");
    }, 240_000);

    afterAll(async () => {
      if (!server || server.exitCode !== null) return;
      const exited = new Promise((r) => server!.once("exit", r));
      server.kill("SIGTERM");
      const timer = setTimeout(() => server?.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(timer);
    }, 30_000);

    /**
     * What Triton said about a model: its load answer, its index reason and the log lines naming it (a parse error's
     * line precedes its own).
     */
    function said(model: string): string {
      const lines = log.split("\n");
      const out = [loads.get(model) ?? "", index.find((m) => m.name === model)?.reason ?? ""];
      lines.forEach((l, i) => {
        if (!new RegExp(`\\b${model}\\b`).test(l)) return;
        out.push(l);
        if (l.includes("failed to read text proto") && lines[i - 1]?.includes("libprotobuf")) out.push(lines[i - 1]!);
      });
      return out.join("\n");
    }

    it.each(CASES.filter((c) => c.triton).map((c) => [c.model, c.triton!]))(
      "Triton refuses to load %s: %s",
      (model, message) => {
        expect(loads.has(model), `${model} was not loaded`).toBe(true);
        expect(loads.get(model), said(model)).toBeDefined();
        expect(index.find((m) => m.name === model)?.state).not.toBe("READY");
        expect(said(model)).toContain(message);
      },
    );

    it.each([...CASES.filter((c) => c.lint === "accepted").map((c) => c.model), SCAFFOLD])(
      "Triton loads %s",
      (model) => {
        expect(loads.has(model), `${model} was not loaded`).toBe(true);
        expect(loads.get(model), said(model)).toBeUndefined();
        expect(
          index.find((m) => m.name === model),
          said(model),
        ).toMatchObject({ state: "READY" });
      },
    );
  });
});
