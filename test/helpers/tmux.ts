import { execFileSync } from "node:child_process";
import fs from "node:fs";

export const hasTmux = (() => {
  try {
    execFileSync("tmux", ["-V"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

/** A private tmux server (own socket), so the test never touches a user's sessions and can always end its own. */
export class Tmux {
  readonly socket: string;
  constructor(readonly session: string) {
    this.socket = `triton-dev-${session}-${process.pid}`;
  }
  run(...args: string[]): string {
    return execFileSync("tmux", ["-L", this.socket, ...args], { encoding: "utf8", timeout: 10_000 });
  }
  screen(): string {
    return this.run("capture-pane", "-p", "-t", this.session);
  }
  keys(...keys: string[]): void {
    for (const k of keys) this.run("send-keys", "-t", this.session, k);
  }
  /** The program the pane runs: the child of the pane's shell. */
  upPid(): number {
    const shell = this.run("display-message", "-p", "-t", this.session, "#{pane_pid}").trim();
    const child = fs.readFileSync(`/proc/${shell}/task/${shell}/children`, "utf8").trim().split(/\s+/)[0];
    return Number(child);
  }
  /** Polls the screen until `re` matches; fails with the screen it last saw. */
  async waitFor(re: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
    return this.#poll((screen) => screen.match(re) ?? undefined, timeoutMs, `never showed ${re} within`);
  }
  /** Polls the screen until `re` no longer matches (an overlay closed); fails with the screen it last saw. */
  async waitForGone(re: RegExp, timeoutMs: number): Promise<void> {
    await this.#poll((screen) => (re.test(screen) ? undefined : true), timeoutMs, `still showed ${re} after`);
  }
  /** The screen every 250 ms until `seen` gives something, for at most `timeoutMs`. */
  async #poll<T>(seen: (screen: string) => T | undefined, timeoutMs: number, failure: string): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    let last = "";
    while (Date.now() < deadline) {
      last = this.screen();
      const hit = seen(last);
      if (hit !== undefined) return hit;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`the screen ${failure} ${timeoutMs} ms; it shows:\n${last}`);
  }
  kill(): void {
    try {
      execFileSync("tmux", ["-L", this.socket, "kill-server"], { stdio: "ignore", timeout: 10_000 });
    } catch {
      // no server left
    }
  }
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Processes whose command line mentions `text` (the run's private state folder), the test's tmux and shell aside. */
export function processesMentioning(text: string): string[] {
  const out: string[] = [];
  for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
      if (cmd.includes(text) && !/^(tmux|sh -c) /.test(cmd) && Number(pid) !== process.pid)
        out.push(`${pid} ${cmd.slice(0, 160)}`);
    } catch {
      // exited meanwhile
    }
  }
  return out;
}
