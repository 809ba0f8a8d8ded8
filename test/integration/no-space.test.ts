import { execFileSync } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ECHO_MODEL_PY, pythonConfig } from "../repo/helpers.js";
import { freePorts, portArgs, runCli, tempDir, testEnv } from "../helpers/cli.js";

/**
 * The state folder on a real, small tmpfs: a model that does not fit is that model's problem, at
 * `up` and on reload, and never leaves a partial snapshot behind.
 */
describe("a full disk under the state folder (real tmpfs, real Triton)", () => {
  let mnt = "";
  let mounted = false;
  let whyNot = "";
  let env: NodeJS.ProcessEnv | undefined;

  beforeAll(async () => {
    mnt = await tempDir("no-space");
    try {
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", mnt], { stdio: "pipe" });
      mounted = true;
    } catch (err) {
      whyNot = String((err as { stderr?: Buffer }).stderr ?? err).trim();
    }
  });

  afterAll(async () => {
    if (env) await runCli(["down"], env);
    if (mounted) execFileSync("umount", [mnt]);
    await fsp.rm(mnt, { recursive: true, force: true });
  }, 60_000);

  const model = (repo: string, name: string, maxBatch = 8) => {
    fs.mkdirSync(path.join(repo, name, "1"), { recursive: true });
    fs.writeFileSync(path.join(repo, name, "config.pbtxt"), pythonConfig(name, undefined, maxBatch));
    fs.writeFileSync(path.join(repo, name, "1", "model.py"), ECHO_MODEL_PY);
  };
  const freeBytes = () => {
    const s = fs.statfsSync(mnt);
    return s.bavail * s.bsize;
  };
  const lastEdit = async (e: NodeJS.ProcessEnv, name: string, after: number) => {
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      const s = JSON.parse((await runCli(["status", "--json"], e)).stdout);
      const edit = s.edits?.find((x: { model: string; id: number }) => x.model === name && x.id > after);
      if (edit && ["ready", "failed", "refused", "unchanged"].includes(edit.outcome)) return { status: s, edit };
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`no settled edit of ${name}`);
  };
  const servedMaxBatch = async (http: number, name: string) =>
    ((await (await fetch(`http://127.0.0.1:${http}/v2/models/${name}/config`)).json()) as { max_batch_size: number })
      .max_batch_size;

  it("refuses at `up` a model that does not fit, then fails a reload that runs out of space; the rest goes on", async (ctx) => {
    if (!mounted) ctx.skip(`cannot mount a tmpfs here (${whyNot}); needs root`);
    env = await testEnv({ TRITON_DEV_STATE_DIR: path.join(mnt, "state") });
    const repo = await tempDir("no-space-models");
    for (const m of ["keep", "grow", "huge"]) model(repo, m);
    // Larger than the whole state disk.
    fs.writeFileSync(path.join(repo, "huge", "1", "weights.bin"), Buffer.alloc(12 * 1024 * 1024, 1));
    const ports = await freePorts();
    const up = await runCli(["up", "--detach", "--models", repo, ...portArgs(ports)], env);
    const said = up.stdout + up.stderr;
    expect(said).not.toMatch(/internal error|\n\s+at /);
    // Ready: everything it serves is READY; the model it could not stage is named with why.
    expect(up.code, said).toBe(0);
    expect(up.stderr).toMatch(/huge: not served, refused: .*no space left/);
    const runDir = path.join(mnt, "state", "runs", fs.readdirSync(path.join(mnt, "state", "runs"))[0]!);
    const store = path.join(runDir, "store");
    expect(fs.readdirSync(store).sort()).toEqual(["grow@1", "keep@1"]);
    const atUp = JSON.parse((await runCli(["status", "--json"], env)).stdout);
    const byName = Object.fromEntries(atUp.models.map((m: { name: string }) => [m.name, m]));
    expect(byName.keep.state).toBe("READY");
    expect(byName.grow.state).toBe("READY");
    expect(byName.huge.state).toBe("REFUSED");
    const lastId = Math.max(0, ...(atUp.edits ?? []).map((e: { id: number }) => e.id));

    // Leave room for the run's own small writes, not for a 2 MB edit.
    fs.writeFileSync(path.join(mnt, "filler"), Buffer.alloc(Math.max(0, freeBytes() - 512 * 1024), 1));
    fs.writeFileSync(path.join(repo, "grow", "config.pbtxt"), pythonConfig("grow", undefined, 4));
    fs.writeFileSync(path.join(repo, "grow", "1", "data.bin"), Buffer.alloc(2 * 1024 * 1024, 1));
    const { status, edit } = await lastEdit(env, "grow", lastId);
    expect(edit.outcome).toBe("failed");
    expect(edit.diagnostics.map((d: { code: string }) => d.code)).toEqual(["staging-no-space"]);
    expect(edit.diagnostics[0].file.startsWith(path.join(repo, "grow"))).toBe(true);
    expect(edit.reason).toMatch(/no space left/);
    expect(edit.reason).toMatch(/the last good version keeps serving$/);
    expect(status.models.find((m: { name: string }) => m.name === "grow")).toMatchObject({ state: "READY" });
    expect(await servedMaxBatch(ports.http, "grow")).toBe(8);
    // No partial snapshot fills the disk further.
    expect(fs.readdirSync(store).sort()).toEqual(["grow@1", "keep@1"]);
    const text = await runCli(["status"], env);
    expect(text.stdout).toMatch(/grow\s+failed\s.*no space left/);
    expect(text.stdout + text.stderr).not.toMatch(/internal error|\n\s+at /);

    // Another model's edit still reloads on the nearly full disk.
    fs.writeFileSync(path.join(repo, "keep", "config.pbtxt"), pythonConfig("keep", undefined, 2));
    const kept = await lastEdit(env, "keep", edit.id);
    expect(kept.edit.outcome, kept.edit.reason).toBe("ready");
    expect(await servedMaxBatch(ports.http, "keep")).toBe(2);

    // Once there is room again, saving the same edit loads it.
    fs.rmSync(path.join(mnt, "filler"));
    fs.writeFileSync(path.join(repo, "grow", "1", "model.py"), ECHO_MODEL_PY + "\n# saved again\n");
    const again = await lastEdit(env, "grow", kept.edit.id);
    expect(again.edit.outcome, again.edit.reason).toBe("ready");
    expect(await servedMaxBatch(ports.http, "grow")).toBe(4);
  }, 300_000);
});
