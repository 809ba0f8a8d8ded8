/**
 * The single-file bundle (`npm run bundle`) is a way to run the tool of its own: carried to
 * another folder under another name (as the GPU scripts carry it, with no checkout beside it),
 * `up --detach` serves, its watcher starts from the same file, a saved edit is served, and `down`
 * leaves nothing running.
 */
import { execFile } from "node:child_process";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePorts, portArgs, ROOT, tempDir, testEnv, type CliResult } from "../helpers/cli.js";
import { OFFSET_MODEL, writeOffsetModel } from "../helpers/offset-model.js";
import { processesMentioning } from "../helpers/tmux.js";

function run(file: string, args: string[], env: NodeJS.ProcessEnv, cwd: string, timeoutMs = 240_000) {
  return new Promise<CliResult>((resolve) => {
    execFile(file, args, { env, cwd, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

/** Y for X = [1, 2, 3, 4] from `offset`, over HTTP. */
async function infer(port: number): Promise<number[]> {
  const res = await fetch(`http://127.0.0.1:${port}/v2/models/offset/infer`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ inputs: [{ name: "X", shape: [1, 4], datatype: "FP32", data: [1, 2, 3, 4] }] }),
  });
  expect(res.status, await res.clone().text()).toBe(200);
  const body = (await res.json()) as { outputs: Array<{ name: string; data: number[] }> };
  return body.outputs.find((o) => o.name === "Y")!.data;
}

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

describe("the single-file bundle", () => {
  it("runs up --detach (watcher included), serves a saved edit, and down, from one file under another name", async () => {
    const built = await run("npm", ["run", "-s", "bundle"], process.env, ROOT, 180_000);
    expect(built.code, built.stderr).toBe(0);
    // Away from the checkout and renamed: nothing beside it, no `triton-dev` or `main.js` in its path.
    const carry = await fsp.mkdtemp(path.join(os.tmpdir(), "carried-"));
    cleanups.push(() => fsp.rm(carry, { recursive: true, force: true }));
    const cli = path.join(carry, "td.mjs");
    await fsp.copyFile(path.join(ROOT, "bundle/triton-dev.mjs"), cli);
    const repo = await tempDir("bundle-models");
    await writeOffsetModel(repo, "1");
    const env = await testEnv();
    const ports = await freePorts();
    const node = (args: string[]) => run(process.execPath, [cli, ...args], env, carry);
    cleanups.push(() => node(["down"]));

    const up = await node(["up", "--detach", "--runtime", "local", "--models", repo, ...portArgs(ports)]);
    expect(up.code, up.stdout + up.stderr).toBe(0);
    expect(up.stdout + up.stderr).not.toMatch(/hot reload did not start/);
    // The watcher is the bundle itself, started again.
    const stateDir = env.TRITON_DEV_STATE_DIR!;
    const run0 = JSON.parse(await fsp.readFile(path.join(stateDir, "run.json"), "utf8")) as {
      supervisorPid?: number;
      runDir: string;
    };
    expect(run0.supervisorPid).toBeDefined();
    const watcherCmd = (await fsp.readFile(`/proc/${run0.supervisorPid}/cmdline`, "utf8")).split("\0");
    expect(watcherCmd.slice(1, 3)).toEqual([cli, "__supervise"]);
    expect(await infer(ports.http)).toEqual([2, 3, 4, 5]);

    // A saved edit: served once the watcher has staged and reloaded it (bounded wait).
    await fsp.writeFile(path.join(repo, "offset", "1", "model.py"), OFFSET_MODEL.replace("x + 1.0", "x + 10.0"));
    const deadline = Date.now() + 90_000;
    let y = await infer(ports.http);
    while (y[0] !== 11 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      y = await infer(ports.http).catch(() => y);
    }
    const log = await fsp.readFile(path.join(run0.runDir, "supervisor.log"), "utf8").catch(() => "");
    expect(y, `supervisor.log:\n${log}`).toEqual([11, 12, 13, 14]);
    expect(log).not.toMatch(/Cannot find module/);

    const down = await node(["down"]);
    expect(down.code, down.stderr).toBe(0);
    expect(down.stdout).toMatch(/stopped Triton/);
    expect(processesMentioning(stateDir)).toEqual([]);
    expect(processesMentioning(cli)).toEqual([]);
  }, 400_000);
});
