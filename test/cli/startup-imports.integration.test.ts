import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, ROOT } from "../helpers/cli.js";

// What each command may load, checked on the built CLI (dist/) through a module-resolution
// trace rather than a timing, so a static import that drags a heavy dependency back onto a
// light command's path fails here on any machine. bench/startup.mjs measures the time itself.

const REGISTER = pathToFileURL(path.join(import.meta.dirname, "module-trace/register.mjs")).href;

let tmp: string;
beforeAll(() => {
  if (!fs.existsSync(CLI)) throw new Error(`run \`npm run build\` first: ${CLI} is missing`);
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "triton-dev-imports-"));
});
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

let runs = 0;

/** Runs the CLI with `args`; returns its exit status, output and the modules it resolved. */
function traced(args: string[], stateDir?: string) {
  const trace = path.join(tmp, `trace-${++runs}.txt`);
  const state = stateDir ?? fs.mkdtempSync(path.join(tmp, "state-"));
  const r = spawnSync(process.execPath, ["--import", REGISTER, CLI, ...args], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, TRITON_DEV_STATE_DIR: state, TRITON_DEV_MODULE_TRACE: trace, CI: "1" },
  });
  const urls = [...new Set(fs.existsSync(trace) ? fs.readFileSync(trace, "utf8").split("\n").filter(Boolean) : [])];
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, urls };
}

/** The packages (`dockerode`, `@grpc/grpc-js`) among the resolved URLs. */
function packages(urls: string[]): Set<string> {
  const out = new Set<string>();
  for (const u of urls) {
    const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(u);
    if (m) out.add(m[1]!);
  }
  return out;
}

/** Our own modules (`cli/main.js`, `repo/gen/model_config_pb.js`) among them. */
function ours(urls: string[]): string[] {
  const dist = pathToFileURL(path.join(ROOT, "dist")).href + "/";
  return urls.filter((u) => u.startsWith(dist)).map((u) => u.slice(dist.length));
}

const RUNTIME_AND_UI = ["dockerode", "ink", "react", "@grpc/grpc-js", "execa", "chokidar"];
const HEAVY = [...RUNTIME_AND_UI, "@bufbuild/protobuf", "zod", "yaml"];
// The generated protobuf code and the model-config schema built on it.
const GENERATED = ["repo/gen/model_config_pb.js", "repo/model-config.js", "triton/gen/grpc_service_pb.js"];

describe("what starting the CLI loads", () => {
  it.each(["--help", "--version", "up --help", "perf --help", "tune --help", "lsp --help"])(
    "`triton-dev %s` loads the command definitions only",
    (cmd) => {
      const r = traced(cmd.split(" "));
      expect(r.code, r.stderr).toBe(0);
      // The trace works: commander and the entry are in it.
      expect(packages(r.urls)).toContain("commander");
      expect(ours(r.urls)).toContain("cli/main.js");
      expect([...packages(r.urls)].filter((p) => HEAVY.includes(p))).toEqual([]);
      expect(ours(r.urls).filter((m) => GENERATED.includes(m) || m.endsWith("-action.js"))).toEqual([]);
    },
  );

  it("status with nothing running loads no schema, client or runtime", () => {
    const r = traced(["status"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("nothing is running (start Triton with `triton-dev up`)\n");
    expect([...packages(r.urls)].filter((p) => HEAVY.includes(p))).toEqual([]);
    expect(ours(r.urls).filter((m) => GENERATED.includes(m))).toEqual([]);
    expect(ours(r.urls)).not.toContain("state/run-state.js");
    expect(ours(r.urls)).not.toContain("session/session.js");
  });

  it("status --json with nothing running prints what it did before", () => {
    const r = traced(["status", "--json"]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual({ running: false });
    expect([...packages(r.urls)].filter((p) => HEAVY.includes(p))).toEqual([]);
  });

  it("status still validates a run record when there is one", () => {
    const state = fs.mkdtempSync(path.join(tmp, "state-"));
    fs.writeFileSync(path.join(state, "run.json"), JSON.stringify({ version: 2 }));
    const r = traced(["status"], state);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `error: the run record ${path.join(state, "run.json")} is not one this version understands`,
    );
    expect(packages(r.urls)).toContain("zod");
  });

  it("lint loads the parser and rules but no runtime, UI or gRPC", () => {
    const r = traced(["lint", "models", "--no-gpu"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/models? checked: 0 errors/);
    expect(packages(r.urls)).toContain("@bufbuild/protobuf");
    expect(ours(r.urls)).toContain("repo/gen/model_config_pb.js");
    expect([...packages(r.urls)].filter((p) => RUNTIME_AND_UI.includes(p))).toEqual([]);
    // triton/binary.js comes with every command (perf's --shape parser uses its tensor types); the clients do not.
    // runtimes/kinds.js, the facts files and ngc-images.js (the NGC images' backends, import-free)
    // are the runtimes' static facts, which lint judges by; they import nothing else, and no driver.
    const facts = (m: string) => /^runtimes\/(kinds|facts|ngc-images|[^/]+\/facts)\.js$/.test(m);
    const offPath = (m: string) =>
      (m.startsWith("runtimes/") && !facts(m)) ||
      m.startsWith("ui/") ||
      m.startsWith("session/") ||
      /^triton\/.*client/.test(m);
    expect(ours(r.urls).filter(offPath)).toEqual([]);
  });
});
