import { execFileSync } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, tempDir, testEnv } from "../helpers/cli.js";
import { ECHO_MODEL_PY, pythonConfig, pythonModel, writeFiles } from "../repo/helpers.js";
import { LspClient } from "./client.js";

// What an editor can hand the server that is not a config: a file of 50 MB, binary bytes, a file
// deleted while open, a repository whose links lead back into themselves. Each gets a finding
// that says what is wrong, the server keeps answering, and its memory stays bounded.

/** The server's resident memory in MB, from /proc. */
function rssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

/** What the server holds beyond a 50 MB text it was sent (the protocol's copies of it included). */
const MEMORY_BOUND_MB = 450;

describe("triton-dev lsp: bad input", () => {
  let repo: string;
  let client: LspClient;
  const cfg = (m: string) => path.join(repo, m, "config.pbtxt");

  beforeAll(async () => {
    repo = await tempDir("lsp-bad");
    await writeFiles(repo, { ...pythonModel("echo"), ...pythonModel("huge"), ...pythonModel("doomed") });
    // Links that lead back into the repository, and two that lead to each other.
    await fsp.symlink(".", path.join(repo, "loop"));
    await fsp.symlink("..", path.join(repo, "echo", "1", "up"));
    await fsp.symlink("ping", path.join(repo, "pong"));
    await fsp.symlink("pong", path.join(repo, "ping"));
    const env = await testEnv();
    client = LspClient.spawn(process.execPath, [CLI, "lsp", "--stdio"], env);
    await client.initialize(repo);
  });
  afterAll(async () => {
    expect(await client.stop()).toBe(0);
    await fsp.rm(repo, { recursive: true, force: true });
  });

  it("a repository with link loops is linted as lint does it, and the server answers", async () => {
    await client.open(cfg("echo"), pythonConfig("echo"));
    const ds = await client.waitForDiagnostics(
      cfg("echo"),
      (d) => d.some((x) => x.code === "model-files-link-loop"),
      30_000,
    );
    // The model's own finding, and the repository's (ping and pong lead to each other), as lint has them.
    expect(ds.map((d) => d.code)).toEqual(["model-files-link-loop", "model-link-dangling", "model-link-dangling"]);
    expect(ds[0]!.message).toMatch(/1\/up/);
    expect(ds.slice(1).map((d) => d.message)).toEqual([
      expect.stringMatching(/^'ping' is a symbolic link to pong, which leads back to itself/),
      expect.stringMatching(/^'pong' is a symbolic link to ping, which leads back to itself/),
    ]);
    const items = await client.completion(cfg("echo"), 0, 0);
    expect(items.map((i) => i.label)).toContain("instance_group");
  });

  it("a 50 MB buffer: one finding saying so, no parse of it, and memory within bounds", async () => {
    const line = `# ${"x".repeat(98)}\n`;
    const text = pythonConfig("huge") + line.repeat((50 * 1024 * 1024) / line.length);
    await client.open(cfg("huge"), text);
    const ds = await client.waitForDiagnostics(
      cfg("huge"),
      (d) => d.some((x) => x.code === "config-unreadable"),
      60_000,
    );
    expect(ds.map((d) => d.code).filter((c) => c !== "model-link-dangling")).toEqual(["config-unreadable"]);
    expect(ds[0]!.message).toMatch(/^cannot read config.pbtxt: it is 50\.\d MB, far larger than any config/);
    expect(await client.completion(cfg("huge"), 3, 0)).toEqual([]);
    expect(await client.hover(cfg("huge"), 2, 2)).toBeNull();
    const rss = rssMb(client.child!.pid!);
    console.log(`lsp bad input: RSS with a 50 MB config open ${rss.toFixed(0)} MB`);
    expect(rss).toBeLessThan(MEMORY_BOUND_MB);
    // Cut back to a config, the finding goes.
    await client.change(cfg("huge"), pythonConfig("huge"));
    await client.waitForDiagnostics(cfg("huge"), (d) => d.every((x) => x.code === "model-link-dangling"), 30_000);
    await client.close(cfg("huge"));
  });

  it("a requirements.txt that is a FIFO or a link to /dev/zero: a finding at it, no hang, memory within bounds", async () => {
    await writeFiles(repo, { ...pythonModel("fifo"), ...pythonModel("zero") });
    const fifo = path.join(repo, "fifo", "requirements.txt");
    const zero = path.join(repo, "zero", "requirements.txt");
    execFileSync("mkfifo", [fifo]);
    await fsp.symlink("/dev/zero", zero);
    await client.open(cfg("fifo"), pythonConfig("fifo"));
    // Not a file an editor can show: the finding is on the model's config, naming requirements.txt.
    // The repository's own findings (ping, pong) may be published on the new config before its
    // model has been read: what is asserted is that the model's finding comes.
    const has = (code: string) => (d: { code?: unknown }[]) => d.some((x) => x.code === code);
    const atFifo = await client.waitForDiagnostics(cfg("fifo"), has("requirements-unreadable"), 30_000);
    expect(atFifo.map((d) => d.code)).toContain("requirements-unreadable");
    await client.open(cfg("zero"), pythonConfig("zero"));
    const atZero = await client.waitForDiagnostics(cfg("zero"), has("requirements-outside-model"), 30_000);
    expect(atZero.map((d) => d.code)).toContain("requirements-outside-model");
    expect(rssMb(client.child!.pid!)).toBeLessThan(MEMORY_BOUND_MB);
    expect((await client.completion(cfg("zero"), 0, 0)).map((i) => i.label)).toContain("instance_group");
    await client.close(cfg("fifo"));
    await client.close(cfg("zero"));
    await fsp.rm(path.join(repo, "fifo"), { recursive: true });
    await fsp.rm(path.join(repo, "zero"), { recursive: true });
  });

  it("binary content: a finding at the first byte that is no text, and the server goes on", async () => {
    const bytes = Buffer.from([0x6e, 0x61, 0x6d, 0x65, 0x3a, 0x20, 0x00, 0x01, 0xff, 0xfe, 0x89, 0x50, 0x4e, 0x47]);
    await client.open(cfg("echo"), bytes.toString("utf8"));
    const ds = await client.waitForDiagnostics(cfg("echo"), (d) => d.some((x) => x.code === "config-syntax"));
    expect(ds.find((d) => d.code === "config-syntax")!.message).toMatch(/NUL character/);
    const items = await client.completion(cfg("echo"), 0, 6);
    expect(Array.isArray(items)).toBe(true);
    // A model file of garbage: lint says it cannot be read; completion has nothing from it.
    await fsp.writeFile(path.join(repo, "echo", "1", "model.py"), ECHO_MODEL_PY);
    await client.change(cfg("echo"), pythonConfig("echo"));
    await client.waitForDiagnostics(cfg("echo"), (d) => !d.some((x) => x.code === "config-syntax"));
    await client.close(cfg("echo"));
  });

  it("a model deleted while its config is open: a finding says so, the buffer's text still answers", async () => {
    await client.open(cfg("doomed"), pythonConfig("doomed").replace("TYPE_FP32", "TYPE_FP99"));
    await client.waitForDiagnostics(cfg("doomed"), (d) => d.some((x) => x.code === "config-enum"));
    await fsp.rm(path.join(repo, "doomed"), { recursive: true });
    await client.change(cfg("doomed"), pythonConfig("doomed").replace("TYPE_FP32", "TYPE_FP98"));
    await client.waitForDiagnostics(
      cfg("doomed"),
      (d) => d.some((x) => x.code === "model-folder-missing") && !d.some((x) => x.code === "config-enum"),
      30_000,
    );
    const items = await client.completion(cfg("doomed"), 0, 0);
    expect(items.map((i) => i.label)).toContain("dynamic_batching");
    const h = await client.hover(cfg("doomed"), 2, 3);
    expect(JSON.stringify(h)).toMatch(/max_batch_size/);
    expect(rssMb(client.child!.pid!)).toBeLessThan(MEMORY_BOUND_MB);
  });
});
