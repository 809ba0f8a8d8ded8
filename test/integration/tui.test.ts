import { execFileSync } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, freePorts, portArgs, runCli, tempDir, testEnv } from "../helpers/cli.js";

const CONFIG = `name: "offset"
backend: "python"
max_batch_size: 8
dynamic_batching { max_queue_delay_microseconds: 100 }
input [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`;

const MODEL = `import numpy as np
import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "X").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", (x + 1.0).astype(np.float32))]))
        return out
`;

const hasTmux = (() => {
  try {
    execFileSync("tmux", ["-V"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

/** A private tmux server (own socket), so the test never touches a user's sessions and can always end its own. */
class Tmux {
  readonly socket = `triton-dev-tui-${process.pid}`;
  readonly session = "up";
  run(...args: string[]): string {
    return execFileSync("tmux", ["-L", this.socket, ...args], { encoding: "utf8", timeout: 10_000 });
  }
  screen(): string {
    return this.run("capture-pane", "-p", "-t", this.session);
  }
  keys(...keys: string[]): void {
    for (const k of keys) this.run("send-keys", "-t", this.session, k);
  }
  /** The `up` process: the child of the pane's shell. */
  upPid(): number {
    const shell = this.run("display-message", "-p", "-t", this.session, "#{pane_pid}").trim();
    const child = fs.readFileSync(`/proc/${shell}/task/${shell}/children`, "utf8").trim().split(/\s+/)[0];
    return Number(child);
  }
  /** Polls the screen until `re` matches; fails with the screen it last saw. */
  async waitFor(re: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    let last = "";
    while (Date.now() < deadline) {
      last = this.screen();
      const m = last.match(re);
      if (m) return m;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`the screen never showed ${re} within ${timeoutMs} ms; it shows:\n${last}`);
  }
  kill(): void {
    try {
      execFileSync("tmux", ["-L", this.socket, "kill-server"], { stdio: "ignore", timeout: 10_000 });
    } catch {
      // no server left
    }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Processes whose command line mentions `text` (the run's private state folder), the test's tmux and shell aside. */
function processesMentioning(text: string): string[] {
  const out: string[] = [];
  for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
      if (cmd.includes(text) && !/^(tmux|sh -c) /.test(cmd) && Number(pid) !== process.pid) out.push(`${pid} ${cmd.slice(0, 160)}`);
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

describe.skipIf(!hasTmux)("the dashboard in a real terminal (tmux, real Triton)", () => {
  const tmux = new Tmux();
  let repo: string;
  let env: NodeJS.ProcessEnv;
  let serverPid = 0;

  beforeAll(async () => {
    repo = await tempDir("tui");
    await fsp.mkdir(path.join(repo, "offset", "1"), { recursive: true });
    await fsp.writeFile(path.join(repo, "offset", "config.pbtxt"), CONFIG);
    await fsp.writeFile(path.join(repo, "offset", "1", "model.py"), MODEL);
    env = await testEnv();
    const ports = await freePorts();
    // Without CI in its environment: under CI `up` prints plain lines instead of the dashboard.
    const vars = ["TRITON_DEV_HOME", "TRITON_DEV_STATE_DIR", "TRITON_DEV_LOG", "PATH", "HOME"].filter((k) => env[k] !== undefined).map((k) => `${k}=${env[k]}`);
    // A shell around `up` writes its exit status on the screen once it ends, and keeps the pane.
    tmux.run(
      "new-session", "-d", "-s", tmux.session, "-x", "120", "-y", "40", "--",
      "sh", "-c", '"$@"; echo "[up exited with $?]"; sleep 300', "sh",
      "env", "-u", "CI", "-u", "CONTINUOUS_INTEGRATION", ...vars, process.execPath, CLI, "up", "--models", repo, ...portArgs(ports),
    );
    const m = await tmux.waitFor(/pid (\d+), poll reload\)[\s\S]*offset\s+v1\s+READY/, 180_000);
    serverPid = Number(m[1]);
  }, 200_000);

  afterAll(async () => {
    tmux.kill();
    if (env) await runCli(["down"], env, 60_000);
  }, 90_000);

  it("shows the new version on the screen after an edit adds it", async () => {
    await fsp.mkdir(path.join(repo, "offset", "2"), { recursive: true });
    await fsp.writeFile(path.join(repo, "offset", "2", "model.py"), MODEL);
    await tmux.waitFor(/offset\s+v2\s+READY/, 60_000);
    await tmux.waitFor(/#\d+ offset READY v2 in \d+\.\d+ s/, 10_000);
  }, 90_000);

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

  it("redraws cleanly when the terminal is resized", async () => {
    const firstLineWidth = (w: number) => new RegExp(`^╭─ Server .{${w - 11}}╮\n`);
    tmux.run("resize-window", "-t", tmux.session, "-x", "90", "-y", "30");
    await tmux.waitFor(firstLineWidth(90), 10_000);
    await new Promise((r) => setTimeout(r, 500));
    const lines = tmux.screen().split("\n");
    expect(lines[0]).toMatch(/^╭─ Server ─+ .*╮$/);
    expect(Math.max(...lines.map((l) => [...l].length))).toBeLessThanOrEqual(90);
    // Every panel is whole: as many top corners as bottom corners, no half-drawn frame.
    const screen = lines.join("\n");
    expect((screen.match(/╭/g) ?? []).length).toBe((screen.match(/╰/g) ?? []).length);
    expect(screen).toMatch(/offset\s+v2\s+READY/);
    tmux.run("resize-window", "-t", tmux.session, "-x", "120", "-y", "40");
    await tmux.waitFor(firstLineWidth(120), 10_000);
  }, 30_000);

  it("quits with q and leaves nothing running", async () => {
    const upPid = tmux.upPid();
    tmux.keys("Escape");
    await new Promise((r) => setTimeout(r, 300));
    tmux.keys("q");
    const exit = await tmux.waitFor(/\[up exited with (\d+)\]/, 60_000);
    expect(exit[1], tmux.screen()).toBe("0");
    // Back on the normal screen: how the run ended, as plain lines.
    expect(tmux.screen()).toMatch(/stopping Triton \(quit from the dashboard\)\nstopped; nothing left running\n\[up exited with 0\]/);
    expect(alive(upPid)).toBe(false);
    expect(alive(serverPid)).toBe(false);
    expect(processesMentioning(env.TRITON_DEV_STATE_DIR!)).toEqual([]);
    const status = await runCli(["status"], env);
    expect(status.stdout + status.stderr).toMatch(/nothing is running/i);
  }, 90_000);
});
