import { execFile } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { UserError } from "../../src/errors.js";
import {
  ensureKeyShim,
  KEY_FROM_FILE,
  keyArg,
  localKeyShimEnv,
  prepareRunKey,
  readRunKey,
} from "../../src/triton/key-shim.js";

const made: string[] = [];
const tmp = async (under = os.tmpdir()) => {
  const dir = await fsp.mkdtemp(path.join(under, "triton-dev-key-"));
  made.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

// The library is built once per home (the test "is built once per home" checks that), so the
// tests share one home and one gcc run instead of compiling it again for each.
let shared: Promise<{ home: string; lib: string }> | undefined;
const sharedShim = () => (shared ??= tmp().then(async (home) => ({ home, lib: await ensureKeyShim(home) })));
const builtLib = async () => (await sharedShim()).lib;

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(cmd, args, { env }, (err, stdout, stderr) =>
      err ? reject(new Error(stderr || err.message)) : resolve(stdout),
    ),
  );
}

// What main() receives (node's process.argv) against what the kernel shows every user
// (/proc/self/cmdline), for a binary started the way tritonserver is. (Not a script behind a
// wrapper such as a pyenv shim: the wrapper would take the key and pass it on in the clear.)
const PROBE = `const fs = require("node:fs");
process.stdout.write(JSON.stringify({ argv: process.argv.slice(1),
  cmdline: fs.readFileSync("/proc/self/cmdline", "utf8").split("\\0").slice(4, -1),
  env: { LD_PRELOAD: process.env.LD_PRELOAD ?? null, TRITON_DEV_KEY_FILE: process.env.TRITON_DEV_KEY_FILE ?? null } }));`;
const probe = (args: string[], env: NodeJS.ProcessEnv, program = path.basename(fs.realpathSync(process.execPath))) =>
  run(process.execPath, ["-e", PROBE, "--", ...args], { ...env, TRITON_DEV_KEY_PROGRAM: program });

describe("the repository-key library", () => {
  it("hands main() the key from the file while the command line keeps the placeholder", async () => {
    const lib = await builtLib();
    const runDir = await tmp();
    const key = await prepareRunKey(runDir, "triton-dev-key", lib);
    const args = [
      `--http-restricted-api=model-repository,shared-memory,logging,trace:${keyArg("triton-dev-key")}`,
      "--other=1",
      `--grpc-restricted-protocol=model-repository,shared-memory,logging,trace:${keyArg("triton-dev-key")}`,
    ];
    const env = { PATH: process.env.PATH, ...localKeyShimEnv(key.dir, { LD_PRELOAD: "", LD_LIBRARY_PATH: "" }) };
    const seen = JSON.parse(await probe(args, env));
    expect(seen.argv).toEqual([
      `--http-restricted-api=model-repository,shared-memory,logging,trace:triton-dev-key=${key.value}`,
      "--other=1",
      `--grpc-restricted-protocol=model-repository,shared-memory,logging,trace:triton-dev-key=${key.value}`,
    ]);
    expect(seen.cmdline).toEqual(args);
    expect(seen.cmdline.join(" ")).not.toContain(key.value);
    // Nothing Triton starts (the python backend's stubs) preloads it or learns where the key is.
    expect(seen.env).toEqual({ LD_PRELOAD: null, TRITON_DEV_KEY_FILE: null });
  });

  it("leaves every other program alone (an image's entrypoint script must not take the key)", async () => {
    const lib = await builtLib();
    const key = await prepareRunKey(await tmp(), "h", lib);
    const env = { PATH: process.env.PATH, ...localKeyShimEnv(key.dir, {}) };
    const arg = `--x=model-repository:${keyArg("h")}`;
    const seen = JSON.parse(await probe([arg], env, "tritonserver"));
    expect(seen.argv).toEqual([arg]);
    // Still set, for the tritonserver the entrypoint starts.
    expect(seen.env.TRITON_DEV_KEY_FILE).toBe(path.join(key.dir, "repository.key"));
  });

  it("keeps a user's own LD_PRELOAD for what the process starts", async () => {
    const lib = await builtLib();
    const key = await prepareRunKey(await tmp(), "h", lib);
    const env = { PATH: process.env.PATH, ...localKeyShimEnv(key.dir, { LD_PRELOAD: "libc.so.6" }) };
    const seen = JSON.parse(await probe([], env));
    expect(seen.env.LD_PRELOAD).toBe("libc.so.6");
  });

  it("fails closed: without a readable key file the placeholder stays, which no client can send", async () => {
    const lib = await builtLib();
    const key = await prepareRunKey(await tmp(), "h", lib);
    await fsp.rm(path.join(key.dir, "repository.key"));
    const env = { PATH: process.env.PATH, ...localKeyShimEnv(key.dir, {}) };
    const seen = JSON.parse(await probe([`--x=model-repository:${keyArg("h")}`], env));
    expect(seen.argv).toEqual([`--x=model-repository:h=${KEY_FROM_FILE}`]);
    expect(KEY_FROM_FILE.endsWith("\n")).toBe(true);
  });

  it("keeps the server's shared memory its user's: umask 077, and no group or other bits on /dev/shm files", async () => {
    const lib = await builtLib();
    const key = await prepareRunKey(await tmp(), "h", lib);
    // A file anywhere else; the unit tests' temporary folders may be in /dev/shm (vitest.config.ts).
    const outside = path.join(await tmp(os.tmpdir().startsWith("/dev/shm") ? "/tmp" : os.tmpdir()), "plain");
    const inShm = `/dev/shm/triton-dev-key-test-${process.pid}`;
    // What the python backend does with each region (boost.interprocess): create, then fchmod 0644
    // whatever the umask; and a chmod by path, for good measure.
    const script = `const fs = require("node:fs");
      const umask = process.umask();
      const modes = {};
      for (const [name, f] of [["shm", ${JSON.stringify(inShm)}], ["outside", ${JSON.stringify(outside)}]]) {
        const fd = fs.openSync(f, "wx", 0o644);
        fs.fchmodSync(fd, 0o644);
        fs.closeSync(fd);
        modes[name + "Fchmod"] = fs.statSync(f).mode & 0o777;
        fs.chmodSync(f, 0o664);
        modes[name + "Chmod"] = fs.statSync(f).mode & 0o777;
        fs.rmSync(f);
      }
      process.stdout.write(JSON.stringify({ umask, modes }));`;
    const env = { PATH: process.env.PATH, ...localKeyShimEnv(key.dir, {}) };
    const node = path.basename(fs.realpathSync(process.execPath));
    const runAs = (program: string) =>
      run(process.execPath, ["-e", script], { ...env, TRITON_DEV_KEY_PROGRAM: program }).then(
        (out) => JSON.parse(out) as { umask: number; modes: Record<string, number> },
      );
    try {
      expect(await runAs(node)).toEqual({
        umask: 0o077,
        modes: { shmFchmod: 0o600, shmChmod: 0o600, outsideFchmod: 0o644, outsideChmod: 0o664 },
      });
      // Any other program (an image's entrypoint) is left as it was.
      const other = await runAs("tritonserver");
      expect(other.modes).toEqual({ shmFchmod: 0o644, shmChmod: 0o664, outsideFchmod: 0o644, outsideChmod: 0o664 });
      expect(other.umask).toBe(process.umask());
    } finally {
      await fsp.rm(inShm, { force: true });
    }
  });

  it("is built once per home and source version, and says what to install without a compiler", async () => {
    const { home, lib } = await sharedShim();
    const built = fs.statSync(lib).mtimeMs;
    expect(await ensureKeyShim(home, { env: { PATH: "/nonexistent" } })).toBe(lib);
    expect(fs.statSync(lib).mtimeMs).toBe(built);
    const err = await ensureKeyShim(await tmp(), { env: { PATH: "/nonexistent", CC: "no-such-cc" } }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).message).toMatch(/no-such-cc: not found; cc: not found/);
    expect((err as UserError).hint).toMatch(/apt install gcc/);
  });

  it("keeps the key folder the user's alone, and a run folder's key across starts", async () => {
    const lib = await builtLib();
    const runDir = await tmp();
    const first = await prepareRunKey(runDir, "h", lib);
    expect(first.value).toMatch(/^[0-9a-f]{48}$/);
    expect(fs.statSync(first.dir).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(first.dir, "repository.key")).mode & 0o777).toBe(0o600);
    expect((await prepareRunKey(runDir, "h", lib)).value).toBe(first.value);
    // A folder kept from an older build gets this build's library.
    await fsp.writeFile(path.join(first.dir, "libtriton-dev-key.so"), "older");
    await prepareRunKey(runDir, "h", lib);
    expect(fs.readFileSync(path.join(first.dir, "libtriton-dev-key.so")).equals(fs.readFileSync(lib))).toBe(true);
    expect(await readRunKey(runDir)).toBe(first.value);
    expect(await readRunKey(await tmp())).toBeUndefined();
  });
});
