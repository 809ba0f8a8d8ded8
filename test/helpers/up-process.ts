import type { ChildProcess } from "node:child_process";
import { spawnCli } from "./cli.js";

export interface UpEvent {
  type: string;
  phase?: string;
  model?: string;
  id?: number;
  reason?: string;
  diagnostics?: Array<{ file: string; line: number; column: number; message: string }>;
  [k: string]: unknown;
}

/** A foreground `triton-dev up --json` as a user's terminal would run it, with its events parsed. */
export class UpProcess {
  readonly events: UpEvent[] = [];
  readonly child: ChildProcess;
  stderr = "";
  private waiters: Array<() => void> = [];
  readonly exited: Promise<number | null>;

  constructor(args: string[], env: NodeJS.ProcessEnv) {
    this.child = spawnCli(["up", "--json", ...args], env);
    let buf = "";
    this.child.stdout!.on("data", (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split("\n");
      buf = lines.pop() ?? "";
      for (const l of lines) {
        if (!l.trim()) continue;
        try {
          this.events.push(JSON.parse(l) as UpEvent);
        } catch {
          this.events.push({ type: "text", text: l });
        }
      }
      for (const w of this.waiters.splice(0)) w();
    });
    this.child.stderr!.on("data", (d: Buffer) => (this.stderr += d.toString()));
    this.exited = new Promise((r) => this.child.once("exit", (code) => r(code)));
  }

  /** Resolves with the first event (at index >= from) matching `pred`; rejects after timeoutMs. */
  async waitFor(pred: (e: UpEvent) => boolean, timeoutMs = 60_000, from = 0): Promise<UpEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.events.slice(from).find(pred);
      if (hit) return hit;
      if (Date.now() > deadline) {
        throw new Error(
          `no matching event within ${timeoutMs} ms; events so far:\n${this.events
            .slice(-15)
            .map((e) => JSON.stringify(e).slice(0, 300))
            .join("\n")}\nstderr: ${this.stderr.slice(-2000)}`,
        );
      }
      await new Promise<void>((r) => {
        const t = setTimeout(r, 200);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  edits(model: string, phase: string, from = 0): UpEvent[] {
    return this.events.slice(from).filter((e) => e.type === "edit" && e.model === model && e.phase === phase);
  }

  /** Ctrl-C, as a terminal sends it; a process still there after `timeoutMs` fails the test with its last events. */
  async stop(timeoutMs = 40_000): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGINT");
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<"late">((r) => (timer = setTimeout(() => r("late"), timeoutMs)));
    const code = await Promise.race([this.exited, late]);
    clearTimeout(timer);
    if (code !== "late") return code;
    this.child.kill("SIGKILL");
    throw new Error(
      `up did not exit within ${timeoutMs} ms of Ctrl-C; last events:\n${this.events
        .slice(-15)
        .map((e) => JSON.stringify(e).slice(0, 300))
        .join("\n")}\nstderr: ${this.stderr.slice(-2000)}`,
    );
  }
}
