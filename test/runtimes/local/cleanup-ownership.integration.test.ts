// `down`'s cleanup against another local user (uid 65534) and against model code: it acts only on
// processes of our uid that run the managed environment's tritonserver (by /proc/PID/exe), and
// removes only shared-memory files of ours directly in the shm folder, never a path a process's
// maps name. Real processes, a real second uid; the attacker's link is in place before the call.
import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { resolvePaths } from "../../../src/config/paths.js";
import { createLocalDriver } from "../../../src/runtimes/local/driver.js";
import { PYTHON_SHM_PREFIX, stopProcessGroup } from "../../../src/runtimes/local/process-group.js";
import { pidAlive } from "../../../src/state/process.js";

const asRoot = process.getuid?.() === 0;
const NOBODY = ["--reuid=65534", "--regid=65534", "--clear-groups"];
const PYTHON = "/usr/bin/python3";

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) {
    try {
      process.kill(-c.pid!, "SIGKILL");
    } catch {
      // gone
    }
  }
});
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});
function tempDir(prefix: string): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(d);
  return d;
}

/** A root-owned 0600 file in a 0700 folder of root's: what the other user wants removed. */
function victim(): { dir: string; file: string } {
  const dir = tempDir("cleanup-victim-");
  const file = path.join(dir, "f");
  fs.writeFileSync(file, "keep me\n", { mode: 0o600 });
  return { dir, file };
}

/**
 * A process that maps `<region>/f`, removes it and its folder and puts a link to `target` where the
 * folder was: its maps still read `<region>/f (deleted)`. It ignores SIGTERM, so a stop ends it
 * the hard way and then looks at what it mapped. Resolves once the link is in place.
 */
const MAPPER = `
import mmap, os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
region, target = sys.argv[1], sys.argv[2]
os.mkdir(region)
f = open(region + "/f", "w+b"); f.write(b"\\0" * 4096); f.flush()
m = mmap.mmap(f.fileno(), 4096)
os.unlink(region + "/f"); os.rmdir(region); os.symlink(target, region)
print("ready", flush=True)
time.sleep(60)
`;

async function started(child: ChildProcess): Promise<void> {
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once("data", () => resolve());
    child.once("exit", (code) => reject(new Error(`the test's process exited (${code})`)));
  });
}

// The managed environment the integration setup installs: its tritonserver is what we start.
const { home, envMarker } = resolvePaths();
const marker = JSON.parse(fs.readFileSync(envMarker, "utf8")) as { serverBin: string };

describe("down's leftover search", () => {
  it.skipIf(!asRoot)(
    "leaves another user's process dressed as our tritonserver alone, and removes nothing its maps name",
    async () => {
      const state = tempDir("cleanup-state-");
      const paths = resolvePaths({ TRITON_DEV_HOME: home, TRITON_DEV_STATE_DIR: state });
      const { dir, file } = victim();
      const region = `/dev/shm/${PYTHON_SHM_PREFIX}${path.basename(dir)}`;
      // As uid 65534: argv[0] is our server's path and its flag names our runs folder (exec -a).
      const fake = spawn(
        "setpriv",
        [
          ...NOBODY,
          "bash",
          "-c",
          'exec -a "$0" "$1" -c "$2" "$3" "$4" "$5"',
          marker.serverBin,
          PYTHON,
          MAPPER,
          region,
          dir,
          `--model-repository=${paths.runsDir}/20260101T000000-000000/repository`,
        ],
        { detached: true, stdio: ["ignore", "pipe", "ignore"] },
      );
      try {
        await started(fake);
        const left = await createLocalDriver().cleanup(300, { paths, env: {} });
        expect(fs.readFileSync(file, "utf8")).toBe("keep me\n");
        expect(left.json).toEqual({ orphans: [] });
        expect(pidAlive(fake.pid!)).toBe(true);
      } finally {
        fs.rmSync(region, { force: true });
      }
    },
    20_000,
  );

  it("leaves a process of ours alone that only calls itself our tritonserver", async () => {
    const state = tempDir("cleanup-state-");
    const paths = resolvePaths({ TRITON_DEV_HOME: home, TRITON_DEV_STATE_DIR: state });
    const fake = spawn(
      "bash",
      [
        "-c",
        'exec -a "$0" "$1" -c "$2" "$3"',
        marker.serverBin,
        PYTHON,
        'import signal, time; print("ready", flush=True); time.sleep(60)',
        `--model-repository=${paths.runsDir}/20260101T000000-000000/repository`,
      ],
      { detached: true, stdio: ["ignore", "pipe", "ignore"] },
    );
    await started(fake);
    const left = await createLocalDriver().cleanup(300, { paths, env: {} });
    expect(left.json).toEqual({ orphans: [] });
    expect(pidAlive(fake.pid!)).toBe(true);
  }, 20_000);
});

describe("ending a process group that has to be killed", () => {
  it("removes no file through a region folder swapped for a link, only its own regions", async () => {
    const shm = tempDir("cleanup-shm-");
    const { dir, file } = victim();
    const region = path.join(shm, `${PYTHON_SHM_PREFIX}folder`);
    const child = spawn(PYTHON, ["-c", MAPPER, region, dir], { detached: true, stdio: ["ignore", "pipe", "ignore"] });
    await started(child);
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    await stopProcessGroup(child.pid!, { graceMs: 300, exited, shmDir: shm });
    expect(pidAlive(child.pid!)).toBe(false);
    expect(fs.readFileSync(file, "utf8")).toBe("keep me\n");
    expect(fs.readlinkSync(region)).toBe(dir);
  }, 20_000);
});
