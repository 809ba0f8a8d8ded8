import type { ChildProcess } from "node:child_process";
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, freePorts, portArgs, runCli, spawnCli, tempDir, testEnv } from "../helpers/cli.js";
import { OFFSET_CONFIG, OFFSET_MODEL, writeOffsetModel } from "../helpers/offset-model.js";
import { alive, hasTmux, Tmux } from "../helpers/tmux.js";

/** JSON lines a `dashboard --json` follower printed, gathered as they come. */
class EventLines {
  readonly events: Array<Record<string, unknown>> = [];
  text = "";
  constructor(readonly child: ChildProcess) {
    child.stdout!.on("data", (d: Buffer) => {
      this.text += d.toString("utf8");
      const lines = this.text.split("\n");
      this.text = lines.pop() ?? "";
      for (const l of lines) if (l.trim()) this.events.push(JSON.parse(l) as Record<string, unknown>);
    });
  }
  async waitFor(
    pred: (e: Record<string, unknown>) => boolean,
    what: string,
    timeoutMs: number,
  ): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const e = this.events.find(pred);
      if (e) return e;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(
      `no event ${what} within ${timeoutMs} ms; got:\n${this.events.map((e) => JSON.stringify(e).slice(0, 200)).join("\n")}`,
    );
  }
}

describe("triton-dev dashboard: attach to a detached run (real Triton)", () => {
  let repo: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    repo = await tempDir("attach");
    await writeOffsetModel(repo, "1");
    // A model lint refuses: `up` leaves it out and says why, and the run is ready (exit 0): it serves the rest.
    await fsp.mkdir(path.join(repo, "broken", "1"), { recursive: true });
    await fsp.writeFile(
      path.join(repo, "broken", "config.pbtxt"),
      OFFSET_CONFIG.replace('"offset"', '"broken"').replace("max_batch_size: 8", "max_batch_size: -2"),
    );
    await fsp.writeFile(path.join(repo, "broken", "1", "model.py"), OFFSET_MODEL);
    env = await testEnv();
    const up = await runCli(["up", "--detach", "--models", repo, ...portArgs(await freePorts())], env);
    expect(up.code, up.stdout + up.stderr).toBe(0);
    expect(up.stderr).toMatch(/^broken: not served, refused: lint found \d+ error\(s\); the first: .*max_batch_size/m);
    expect(up.stderr).not.toMatch(/failed to load/);
  }, 200_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env, 60_000);
  }, 90_000);

  it("status lists the refused model with its first diagnostic, though Triton never saw it", async () => {
    const s = JSON.parse((await runCli(["status", "--json"], env)).stdout);
    const broken = s.models.find((m: { name: string }) => m.name === "broken");
    expect(broken).toMatchObject({ state: "REFUSED" });
    expect(broken.reason).toMatch(
      /^lint found \d+ error\(s\); the first: .*broken\/config\.pbtxt:3:\d+: error: .*max_batch_size/,
    );
  });

  it("says plainly when nothing is running", async () => {
    const other = await testEnv();
    const r = await runCli(["dashboard", "--no-ui"], other);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/nothing is running[\s\S]*hint: Start one with `triton-dev up --detach`/);
  });

  it("follows the run's events without a terminal: the models, then each edit's timeline as the background watcher reloads it", async () => {
    const child = spawnCli(["dashboard", "--json"], env);
    const lines = new EventLines(child);
    try {
      const ready = await lines.waitFor((e) => e.type === "ready", "ready", 30_000);
      expect(ready.models).toEqual([expect.objectContaining({ name: "offset", version: "1", state: "READY" })]);
      // The refused model is in the replayed timeline, with the diagnostic that refused it.
      const refusal = await lines.waitFor(
        (e) => e.type === "edit" && e.model === "broken" && e.phase === "refused",
        "broken refused",
        30_000,
      );
      expect(JSON.stringify(refusal.diagnostics)).toMatch(/max_batch_size/);
      // Its elapsed time is the server's uptime, told apart from a start's duration.
      expect(ready.attached).toBe(true);
      await lines.waitFor((e) => e.type === "watching", "watching (replayed from the run's record)", 30_000);
      await writeOffsetModel(repo, "2");
      const done = await lines.waitFor(
        (e) => e.type === "edit" && e.model === "offset" && e.phase === "ready",
        "edit ready",
        60_000,
      );
      expect(done.version).toBe("2");
      const phases = lines.events.filter((e) => e.type === "edit" && e.id === done.id).map((e) => e.phase);
      expect(phases).toEqual(expect.arrayContaining(["saved", "validated", "staged", "ready"]));
    } finally {
      child.kill("SIGINT");
    }
    const code = await new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
    expect(code).toBe(0);
    // Leaving the follower stops nothing.
    const status = await runCli(["status", "--json"], env);
    expect(JSON.parse(status.stdout)).toMatchObject({ running: true });
  }, 180_000);

  it.skipIf(!hasTmux)(
    "opens the dashboard in a terminal, reloads with r through the background watcher, and q leaves Triton running",
    async () => {
      const tmux = new Tmux("attach");
      try {
        const vars = ["TRITON_DEV_HOME", "TRITON_DEV_STATE_DIR", "TRITON_DEV_LOG", "PATH", "HOME"]
          .filter((k) => env[k] !== undefined)
          .map((k) => `${k}=${env[k]}`);
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
          '"$@"; echo "[dashboard exited with $?]"; sleep 300',
          "sh",
          "env",
          "-u",
          "CI",
          "-u",
          "CONTINUOUS_INTEGRATION",
          ...vars,
          process.execPath,
          CLI,
          "dashboard",
        );
        await tmux.waitFor(/offset\s+v2\s+READY/, 30_000);
        // The edit made while nobody watched is in the timeline, replayed from the run's record.
        const shown = await tmux.waitFor(/#(\d+) offset READY v2 in \d+\.\d+ s/, 30_000);
        const pid = tmux.upPid();
        tmux.keys("?");
        const help = /q {2}Ctrl-C\s+quit; the detached Triton keeps running/;
        await tmux.waitFor(help, 30_000);
        tmux.keys("Escape");
        // As a user types: the help closes before the next key. An escape and a letter that reach
        // the dashboard in one read are Alt+letter to a terminal, not two keys.
        await tmux.waitForGone(help, 30_000);
        // broken sorts first and starts selected; j selects offset.
        tmux.keys("j");
        await tmux.waitFor(/> offset\s+v2/, 30_000);
        tmux.keys("r");
        await tmux.waitFor(new RegExp(`#${Number(shown[1]) + 1} offset READY v2 in \\d+\\.\\d+ s`), 60_000);
        tmux.keys("q");
        const exit = await tmux.waitFor(/\[dashboard exited with (\d+)\]/, 30_000);
        expect(exit[1], tmux.screen()).toBe("0");
        expect(alive(pid)).toBe(false);
      } finally {
        tmux.kill();
      }
      const status = await runCli(["status", "--json"], env);
      expect(JSON.parse(status.stdout)).toMatchObject({
        running: true,
        models: expect.arrayContaining([expect.objectContaining({ name: "offset", version: "2", state: "READY" })]),
      });
    },
    240_000,
  );

  it("a follower ends by itself when the run is stopped from another shell", async () => {
    const child = spawnCli(["dashboard", "--json"], env);
    const lines = new EventLines(child);
    await lines.waitFor((e) => e.type === "ready", "ready", 20_000);
    const exited = new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
    const down = await runCli(["down"], env, 60_000);
    expect(down.code, down.stderr).toBe(0);
    expect(await exited).toBe(0);
    expect(lines.events.some((e) => e.type === "server-exited")).toBe(true);
  }, 90_000);
});
