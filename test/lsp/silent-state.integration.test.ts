import { spawn } from "node:child_process";
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, tempDir, testEnv } from "../helpers/cli.js";
import { pythonConfig, pythonModel, writeFiles } from "../repo/helpers.js";
import { LspClient } from "./client.js";

// States an editor would otherwise show as a hung server or a clean file: input whose framing is
// broken ends the server with the reason on stderr (the editor starts it again), and what lint
// knows but no model's config holds (a model folder deleted under an open config, a link that
// leads nowhere) is published on the open configs.

/** Runs the built server, writes `bytes` to it, and waits for it to end (at most 15 s). */
async function feed(bytes: string): Promise<{ code: number | null; stderr: string; late: boolean }> {
  const env = await testEnv();
  const child = spawn(process.execPath, [CLI, "lsp", "--stdio"], { env, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  child.stdout.resume();
  child.stdin.write(bytes);
  // stdin stays open, as an editor's pipe does: only the bad framing may end the server.
  const ended = await Promise.race([
    new Promise<number | null>((r) => child.once("exit", (c) => r(c))),
    new Promise<"late">((r) => setTimeout(() => r("late"), 15_000)),
  ]);
  if (ended === "late") child.kill("SIGKILL");
  return { code: ended === "late" ? null : ended, stderr, late: ended === "late" };
}

const message = (body: string) => `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
const INIT = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { processId: null, rootUri: null, capabilities: {} },
});

describe("triton-dev lsp: bad framing ends the server with the reason", () => {
  const cases: Array<[string, string, RegExp]> = [
    ["Content-Length missing", `Content-Type: application/json\r\n\r\n${INIT}`, /without Content-Length/],
    ["Content-Length not a number", `Content-Length: twelve\r\n\r\n${INIT}`, /Content-Length "twelve" is not a byte/],
    ["Content-Length negative", `Content-Length: -40\r\n\r\n${INIT}`, /Content-Length "-40" is not a byte count/],
    ["Content-Length too small", `Content-Length: 20\r\n\r\n${INIT}`, /are not one JSON message.*the length is wrong/],
    ["no header at all", `${INIT}\r\n`, /expected a header such as "Content-Length: 123"/],
    ["a good message, then a bad one", message(INIT) + `Content-Length: 1e3\r\n\r\n{}`, /at byte \d+/],
  ];
  for (const [what, bytes, reason] of cases)
    it(`${what}: exit 1, and stderr says what was wrong`, async () => {
      const r = await feed(bytes);
      expect(r.late, `the server kept running; stderr: ${r.stderr}`).toBe(false);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^error: language server input: /m);
      expect(r.stderr).toMatch(reason);
      expect(r.stderr).toMatch(/hint: .*Content-Length: N/);
    }, 30_000);
});

describe("triton-dev lsp: findings no model's config holds", () => {
  let repo: string;
  let client: LspClient;
  const cfg = (m: string) => path.join(repo, m, "config.pbtxt");

  beforeAll(async () => {
    repo = await tempDir("lsp-silent");
    await writeFiles(repo, { ...pythonModel("kept"), ...pythonModel("doomed") });
    await fsp.symlink("gone_model", path.join(repo, "broken"));
    client = LspClient.spawn(process.execPath, [CLI, "lsp", "--stdio"], await testEnv());
    await client.initialize(repo);
  }, 60_000);
  afterAll(async () => {
    expect(await client.stop()).toBe(0);
    await fsp.rm(repo, { recursive: true, force: true });
  }, 60_000);

  it("a dangling link in the repository is shown on the open config, as lint reports it", async () => {
    await client.open(cfg("kept"), pythonConfig("kept"));
    const ds = await client.waitForDiagnostics(cfg("kept"), (d) => d.length > 0, 30_000);
    expect(ds.map((d) => [d.code, d.severity])).toEqual([["model-link-dangling", 2]]);
    expect(ds[0]!.message).toMatch(/'broken' is a symbolic link to gone_model, which does not exist/);
    // Fixed on disk: the watcher sees it and the finding goes.
    await fsp.rm(path.join(repo, "broken"));
    await client.waitForDiagnostics(cfg("kept"), (d) => d.length === 0, 30_000);
  }, 60_000);

  it("a model folder deleted while its config is open: a finding says so", async () => {
    await client.open(cfg("doomed"), pythonConfig("doomed"));
    await client.waitForDiagnostics(cfg("doomed"), (d) => d.length === 0, 30_000);
    await fsp.rm(path.join(repo, "doomed"), { recursive: true });
    const ds = await client.waitForDiagnostics(cfg("doomed"), (d) => d.length > 0, 30_000);
    expect(ds.map((d) => [d.code, d.severity])).toEqual([["model-folder-missing", 1]]);
    expect(ds[0]!.message).toMatch(/model folder 'doomed' no longer exists/);
    // Typing in it keeps the finding; the other open config stays clean.
    await client.change(cfg("doomed"), pythonConfig("doomed", undefined, 4));
    await new Promise((r) => setTimeout(r, 500));
    expect(client.diagnostics.get(client.uri(cfg("doomed")))!.map((d) => d.code)).toEqual(["model-folder-missing"]);
    expect(client.diagnostics.get(client.uri(cfg("kept")))).toEqual([]);
    // Each answer names the version of the text it is about.
    const last = client.published.filter((p) => p.uri === client.uri(cfg("doomed"))).at(-1)!;
    expect(last.version).toBe(2);
  }, 60_000);
});
