// Real process groups that stop on a simulated second-by-second unload: slow by design (about 5 s),
// so an integration test; what it checks is pure stop logic and needs no server.
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

/**
 * A process group that exits as tritonserver 2.51 does with python models: the inferences in flight
 * first (`inflightS` seconds of them), then "All models are stopped", then each model unloaded after
 * its own delay (its stubs end one at a time), then its exit. A stub child maps a shared-memory
 * region of `shm`, as the python backend's do, and outlives the SIGTERM until the server ends it.
 */
function fakeExit(
  logFile: string,
  o: { inflightS: number; unloads: Array<[string, number]>; shm: string },
): { pid: number; exited: Promise<void> } {
  const line = (text: string) => `echo "I1201 23:24:48.622946 1 server.cc:1] \\"${text}\\"" >> ${logFile}`;
  const unloads = o.unloads
    .map(([m, s]) => `(sleep ${s}; ${line(`successfully unloaded '${m}' version 1`)}) &`)
    .join("\n");
  const script = `
    python3 -c 'import mmap,signal,sys,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); f=open(sys.argv[1],"w+b"); f.write(b"\\0"*4096); f.flush(); m=mmap.mmap(f.fileno(),4096); time.sleep(60)' ${o.shm} &
    trap 'stopping=1' TERM
    stopping=0
    while [ $stopping = 0 ]; do sleep 0.05; done
    ${line("Waiting for in-flight requests to complete.")}
    for i in $(seq ${o.inflightS} -1 1); do
      ${line("Timeout 10: Found 1 model versions that have in-flight inferences")}
      ${line("Model 'plain' (version 1) has 1 in-flight inferences")}
      sleep 1
    done
    ${line("Timeout 10: Found 0 model versions that have in-flight inferences")}
    ${line("All models are stopped, unloading models")}
    ${unloads}
    wait %2 %3 2>/dev/null; sleep ${Math.max(...o.unloads.map(([, s]) => s)) + 0.2}
    rm -f ${o.shm}; kill %1; exit 0`;
  fs.writeFileSync(logFile, "I1201 23:24:40.000000 1 server.cc:1] started\n");
  const child = spawn("bash", ["-c", script], { detached: true, stdio: "ignore" });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  return { pid: child.pid!, exited };
}

describe("stopProcessGroup told which unloads run the models' code", () => {
  const loadedTwo = async () => [
    { name: "fin", version: "1", state: "READY" },
    { name: "plain", version: "1", state: "READY" },
  ];

  it("ends the group once nothing is in flight, without waiting for unloads that run no code, and removes its shared memory", async () => {
    const logFile = path.join(dir, "fast.log");
    const shm = fs.mkdtempSync(path.join(os.tmpdir(), "triton-dev-shm-"));
    const region = path.join(shm, `${PYTHON_SHM_PREFIX}stub`);
    const server = fakeExit(logFile, {
      inflightS: 0,
      unloads: [
        ["fin", 6],
        ["plain", 6],
      ],
      shm: region,
    });
    // The stub has mapped its region (python's start, bounded).
    const until = Date.now() + 10_000;
    while (!fs.existsSync(region) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 300));
    expect(fs.existsSync(region)).toBe(true);
    const outcome = await stopProcessGroup(server.pid, {
      graceMs: 15_000,
      exited: server.exited,
      shmDir: shm,
      unloads: { logFile, loaded: loadedTwo, waitFor: async () => [] },
    });
    expect(outcome).toMatchObject({ ended: "ended", waitedFor: [] });
    expect(running(server.pid)).toEqual([]);
    expect(fs.readFileSync(logFile, "utf8")).not.toMatch(/successfully unloaded/);
    expect(fs.existsSync(region)).toBe(false);
    fs.rmSync(shm, { recursive: true, force: true });
  }, 20_000);

  it("waits for the inferences in flight and for a model with finalize, says so, and not for the others", async () => {
    const logFile = path.join(dir, "finalize.log");
    const shm = fs.mkdtempSync(path.join(os.tmpdir(), "triton-dev-shm-"));
    const region = path.join(shm, `${PYTHON_SHM_PREFIX}stub`);
    const server = fakeExit(logFile, {
      inflightS: 1,
      unloads: [
        ["fin", 0.5],
        ["plain", 8],
      ],
      shm: region,
    });
    const until = Date.now() + 10_000;
    while (!fs.existsSync(region) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 300));
    const progress: string[] = [];
    const outcome = await stopProcessGroup(server.pid, {
      graceMs: 15_000,
      exited: server.exited,
      shmDir: shm,
      unloads: {
        logFile,
        loaded: loadedTwo,
        onProgress: (m) => progress.push(m),
        waitFor: async (loaded) => {
          expect(loaded.map((m) => m.name)).toEqual(["fin", "plain"]);
          return [{ model: "fin", why: "1/model.py:9 defines finalize" }];
        },
      },
    });
    expect(outcome).toMatchObject({ ended: "ended", waitedFor: [{ model: "fin" }] });
    const log = fs.readFileSync(logFile, "utf8");
    expect(log).toMatch(/successfully unloaded 'fin'/);
    expect(log).not.toMatch(/successfully unloaded 'plain'/);
    expect(running(server.pid)).toEqual([]);
    expect(progress[0]).toBe("waiting for Triton to unload fin (1/model.py:9 defines finalize)");
    expect(progress).toContain("waiting for the requests in flight to finish: plain (1)");
    expect(fs.readdirSync(shm)).toEqual([]);
    fs.rmSync(shm, { recursive: true, force: true });
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
