import fs from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, freePorts, portArgs, runCli, tempDir, testEnv } from "../helpers/cli.js";
import { writeOffsetModel } from "../helpers/offset-model.js";
import { alive, hasTmux, processesMentioning, Tmux } from "../helpers/tmux.js";

const IDENTITY = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  "../fixtures/identity-optional/identity_optional",
);

describe.skipIf(!hasTmux)("the dashboard in a real terminal (tmux, real Triton)", () => {
  const tmux = new Tmux("up");
  let repo: string;
  let env: NodeJS.ProcessEnv;
  let serverPid = 0;

  beforeAll(async () => {
    repo = await tempDir("tui");
    await writeOffsetModel(repo, "1");
    // A model of dynamic shapes (the identity-like fixture), named to sort after offset so offset
    // stays the model selected first.
    await fs.cp(IDENTITY, path.join(repo, "shapes_identity"), { recursive: true });
    const config = path.join(repo, "shapes_identity", "config.pbtxt");
    await fs.writeFile(config, (await fs.readFile(config, "utf8")).replace('"identity_optional"', '"shapes_identity"'));
    env = await testEnv();
    const ports = await freePorts();
    // Without CI in its environment: under CI `up` prints plain lines instead of the dashboard.
    const vars = ["TRITON_DEV_HOME", "TRITON_DEV_STATE_DIR", "TRITON_DEV_LOG", "PATH", "HOME"]
      .filter((k) => env[k] !== undefined)
      .map((k) => `${k}=${env[k]}`);
    // A shell around `up` writes its exit status on the screen once it ends, and keeps the pane.
    tmux.run(
      "new-session",
      "-d",
      "-s",
      tmux.session,
      "-x",
      "120",
      "-y",
      "40",
      "--",
      "sh",
      "-c",
      '"$@"; echo "[up exited with $?]"; sleep 300',
      "sh",
      "env",
      "-u",
      "CI",
      "-u",
      "CONTINUOUS_INTEGRATION",
      ...vars,
      process.execPath,
      CLI,
      "up",
      "--models",
      repo,
      ...portArgs(ports),
    );
    const m = await tmux.waitFor(/pid (\d+), poll reload\)[\s\S]*offset\s+v1\s+READY/, 180_000);
    serverPid = Number(m[1]);
  }, 200_000);

  afterAll(async () => {
    tmux.kill();
    if (env) await runCli(["down"], env, 60_000);
  }, 90_000);

  it("shows the new version on the screen after an edit adds it", async () => {
    await writeOffsetModel(repo, "2");
    await tmux.waitFor(/offset\s+v2\s+READY/, 60_000);
    await tmux.waitFor(/#\d+ offset READY v2 in \d+\.\d+ s/, 30_000);
  }, 120_000);

  it("reloads the selected model with r, through validate, stage and load", async () => {
    const before = Number((tmux.screen().match(/#(\d+) offset READY/) ?? [])[1] ?? 0);
    tmux.keys("r");
    await tmux.waitFor(new RegExp(`#${before + 1} offset READY v2 in \\d+\\.\\d+ s`), 60_000);
  }, 90_000);

  it("runs a quick perf check with p and shows a throughput figure", async () => {
    tmux.keys("p");
    const m = await tmux.waitFor(/best (\d+(?:\.\d+)?) infer\/s at concurrency \d/, 120_000);
    expect(Number(m[1])).toBeGreaterThan(0);
    expect(tmux.screen()).toMatch(/throughput \(infer\/s\)/);
  }, 150_000);

  it("asks for the shapes of a dynamic model at a prompt when p needs them, then measures it", async () => {
    tmux.keys("Escape", "j");
    await tmux.waitFor(/> shapes_identity/, 30_000);
    tmux.keys("p");
    await tmux.waitFor(/shapes for shapes_identity:/, 30_000);
    expect(tmux.screen()).toContain("INPUT0 [-1,-1], INPUT1 [-1,-1]");
    expect(tmux.screen()).not.toContain("--shape");
    tmux.keys("INPUT0=2x3", "Space", "INPUT1=1x2", "Enter");
    const m = await tmux.waitFor(
      /shapes INPUT0=2x3 INPUT1=1x2;[\s\S]*best (\d+(?:\.\d+)?) infer\/s at concurrency \d/,
      120_000,
    );
    expect(Number(m[1])).toBeGreaterThan(0);
    expect(tmux.screen()).toMatch(/Perf: shapes_identity/);
    tmux.keys("Escape", "k");
    await tmux.waitFor(/> offset/, 30_000);
  }, 240_000);

  it("redraws cleanly when the terminal is resized", async () => {
    const firstLineWidth = (w: number) => new RegExp(`^╭─ Server .{${w - 11}}╮\n`);
    tmux.run("resize-window", "-t", tmux.session, "-x", "90", "-y", "30");
    await tmux.waitFor(firstLineWidth(90), 30_000);
    await new Promise((r) => setTimeout(r, 500));
    const lines = tmux.screen().split("\n");
    expect(lines[0]).toMatch(/^╭─ Server ─+ .*╮$/);
    expect(Math.max(...lines.map((l) => [...l].length))).toBeLessThanOrEqual(90);
    // Every panel is whole: as many top corners as bottom corners, no half-drawn frame.
    const screen = lines.join("\n");
    expect((screen.match(/╭/g) ?? []).length).toBe((screen.match(/╰/g) ?? []).length);
    expect(screen).toMatch(/offset\s+v2\s+READY/);
    tmux.run("resize-window", "-t", tmux.session, "-x", "120", "-y", "40");
    await tmux.waitFor(firstLineWidth(120), 30_000);
  }, 90_000);

  it("quits with q and leaves nothing running", async () => {
    const upPid = tmux.upPid();
    tmux.keys("Escape");
    await new Promise((r) => setTimeout(r, 300));
    tmux.keys("q");
    const exit = await tmux.waitFor(/\[up exited with (\d+)\]/, 60_000);
    expect(exit[1], tmux.screen()).toBe("0");
    // Back on the normal screen: how the run ended, as plain lines.
    expect(tmux.screen()).toMatch(
      /stopping Triton \(quit from the dashboard\)\nstopped; nothing left running\n\[up exited with 0\]/,
    );
    expect(alive(upPid)).toBe(false);
    expect(alive(serverPid)).toBe(false);
    expect(processesMentioning(env.TRITON_DEV_STATE_DIR!)).toEqual([]);
    const status = await runCli(["status"], env);
    expect(status.stdout + status.stderr).toMatch(/nothing is running/i);
  }, 90_000);
});
