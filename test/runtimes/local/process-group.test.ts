import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { PYTHON_SHM_PREFIX, stopProcessGroup } from "../../../src/runtimes/local/process-group.js";

/** Members of the process group that still run (zombies waiting for init to reap them do not). */
function running(pgid: number): number[] {
  return fs
    .readdirSync("/proc")
    .filter((e) => /^\d+$/.test(e))
    .filter((e) => {
      try {
        const stat = fs.readFileSync(`/proc/${e}/stat`, "utf8");
        const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        return Number(pgrp) === pgid && state !== "Z";
      } catch {
        return false;
      }
    })
    .map(Number);
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "triton-dev-stop-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/**
 * A process group that exits the way tritonserver 2.51 does on SIGTERM: it logs each model it
 * unloads, then once a second how many models it still counts as live, and exits when that is 0.
 * `ghosts` is what it keeps counting after a reload that failed beside a serving version.
 */
function fakeTriton(logFile: string, o: { unloadMs: number; ghosts: number }): { pid: number; exited: Promise<void> } {
  const script = `
    trap 'stopping=1' TERM
    stopping=0
    while [ $stopping = 0 ]; do sleep 0.05; done
    sleep ${o.unloadMs / 1000}
    echo "I1201 23:24:48.622946 1 model_lifecycle.cc:624] \\"successfully unloaded 'good' version 1\\"" >> ${logFile}
    echo "I1201 23:24:48.722946 1 model_lifecycle.cc:624] \\"successfully unloaded 'other' version 1\\"" >> ${logFile}
    for t in 9 8 7 6 5 4 3 2 1 0; do
      echo "I1201 23:24:49.000000 1 server.cc:345] \\"Timeout $t: Found ${o.ghosts} live models and 0 in-flight non-inference requests\\"" >> ${logFile}
      [ ${o.ghosts} = 0 ] && exit 0
      sleep 1
    done`;
  fs.writeFileSync(logFile, "I1201 23:24:40.000000 1 server.cc:1] started\n");
  const child = spawn("bash", ["-c", script], { detached: true, stdio: "ignore" });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  return { pid: child.pid!, exited };
}

const loaded = async () => [
  { name: "good", version: "1", state: "READY" },
  { name: "other", version: "1", state: "READY" },
];

describe("stopProcessGroup with the unloads followed in Triton's log", () => {
  it("stops waiting once everything loaded has unloaded, though Triton still counts a failed reload, and says what it waits for", async () => {
    const logFile = path.join(dir, "ghosts.log");
    const server = fakeTriton(logFile, { unloadMs: 1200, ghosts: 1 });
    await new Promise((r) => setTimeout(r, 200));
    const progress: string[] = [];
    const t0 = Date.now();
    await stopProcessGroup(server.pid, {
      graceMs: 15_000,
      exited: server.exited,
      unloads: { logFile, loaded, onProgress: (m) => progress.push(m), progressAfterMs: 500 },
    });
    const ms = Date.now() - t0;
    expect(running(server.pid)).toEqual([]);
    // Its own exit would have taken the full 10 s "exit timeout"; about 1.5 s here, with room for a busy machine.
    expect(ms).toBeLessThan(6_000);
    expect(progress[0]).toBe("waiting for Triton to unload good, other");
    expect(progress.at(-1)).toBe("everything is unloaded; waiting for Triton to exit");
  }, 20_000);

  it("lets Triton exit by itself when it does, saying nothing for a stop under the progress delay", async () => {
    const logFile = path.join(dir, "clean.log");
    const server = fakeTriton(logFile, { unloadMs: 100, ghosts: 0 });
    await new Promise((r) => setTimeout(r, 200));
    const progress: string[] = [];
    await stopProcessGroup(server.pid, {
      graceMs: 15_000,
      exited: server.exited,
      unloads: { logFile, loaded, onProgress: (m) => progress.push(m), settleMs: 5_000 },
    });
    expect(running(server.pid)).toEqual([]);
    expect(progress).toEqual([]);
  }, 20_000);

  it("waits for the exit as before when Triton does not say what it has loaded", async () => {
    const logFile = path.join(dir, "unknown.log");
    const server = fakeTriton(logFile, { unloadMs: 100, ghosts: 0 });
    await new Promise((r) => setTimeout(r, 200));
    await stopProcessGroup(server.pid, {
      graceMs: 15_000,
      exited: server.exited,
      unloads: { logFile, loaded: () => Promise.reject(new Error("no answer")) },
    });
    expect(running(server.pid)).toEqual([]);
  }, 20_000);
});

describe("stopProcessGroup with a server that has to be killed", () => {
  it("removes the python backend's shared-memory regions the group mapped, and no other", async () => {
    const shm = fs.mkdtempSync(path.join(os.tmpdir(), "triton-dev-shm-"));
    const ours = path.join(shm, `${PYTHON_SHM_PREFIX}ours`);
    const other = path.join(shm, `${PYTHON_SHM_PREFIX}another-server`);
    fs.writeFileSync(other, Buffer.alloc(4096));
    // A stub that ignores SIGTERM while it maps its region, as a hung one does.
    const script = `
import mmap, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
f = open(${JSON.stringify(ours)}, "w+b"); f.write(b"\\0" * 65536); f.flush()
m = mmap.mmap(f.fileno(), 65536)
print("mapped", flush=True)
time.sleep(60)
`;
    const child = spawn("python3", ["-c", script], { detached: true, stdio: ["ignore", "pipe", "ignore"] });
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    await new Promise<void>((r) => child.stdout!.once("data", () => r()));
    await stopProcessGroup(child.pid!, { graceMs: 300, exited, shmDir: shm });
    expect(running(child.pid!)).toEqual([]);
    expect(fs.existsSync(ours)).toBe(false);
    expect(fs.existsSync(other)).toBe(true);
    fs.rmSync(shm, { recursive: true, force: true });
  });
});
