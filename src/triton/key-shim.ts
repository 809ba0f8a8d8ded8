/**
 * How the repository key reaches tritonserver without ever being in a process's arguments.
 *
 * Triton 2.51 takes the key of its restricted model-repository API only as a command-line value
 * (`--http-restricted-api=model-repository:HEADER=KEY`, and the gRPC twin), and every local user
 * can read any process's command line (`ps`, /proc/PID/cmdline; for containers too, since their
 * processes are the host's). So tritonserver is started with a placeholder no client can send (it
 * ends in a newline, which no HTTP header or gRPC metadata value may contain), and a tiny
 * preloaded library swaps in the real key from a file only the user can read, before main() runs:
 * glibc hands argc/argv to a preloaded library's constructors, and main() receives the same argv
 * array. The strings the kernel shows as the command line are never touched, so they keep the
 * placeholder. If the library does not run, the API stays closed to everyone (fail closed), and
 * `up` says so instead of serving with an open API.
 *
 * The library is C, compiled once per source version and machine into the triton-dev home with
 * the system's C compiler, and copied into each run folder beside the key so that a container or
 * pod sees both through one read-only mount.
 */
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { execa } from "execa";
import { requireTrustedHome } from "../config/home-trust.js";
import { UserError } from "../errors.js";

/** What tritonserver's command line carries instead of the key. */
export const KEY_FROM_FILE = "triton-dev-key-file\n";
/** Where the preloaded library reads the key file's path from. */
export const KEY_FILE_ENV = "TRITON_DEV_KEY_FILE";
export const KEY_SHIM_LIBRARY = "libtriton-dev-key.so";
/** The run folder's subfolder holding the key and the library (mounted read-only into containers). */
export const RUN_KEY_DIR = "key";
export const KEY_FILE = "repository.key";

/** `HEADER=placeholder`, the value of the restricted-API flags. */
export function keyArg(header: string): string {
  return `${header}=${KEY_FROM_FILE}`;
}

// It acts only in the tritonserver binary itself: an image's entrypoint script (NGC's runs
// `exec "$@"`) would otherwise take the key in its own argv and pass it on in the clear. There,
// only arguments ending in the placeholder are rewritten, at most two (the HTTP and gRPC flags),
// into static buffers: no allocation, nothing else in the process changes. The two variables are
// then removed so that the python backend's stubs and anything else Triton starts neither preload
// the library nor learn where the key is; a user's own LD_PRELOAD after ours is kept for them.
const SOURCE = String.raw`
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PLACEHOLDER "=triton-dev-key-file\n"
#define LIBRARY "libtriton-dev-key.so"

static char rewritten[2][1024];

static void restore_preload(void) {
  const char *p = getenv("LD_PRELOAD");
  if (!p) return;
  const char *own = strstr(p, LIBRARY);
  if (!own) return;
  const char *rest = own + strlen(LIBRARY);
  while (*rest == ' ' || *rest == ':') rest++;
  if (*rest) setenv("LD_PRELOAD", rest, 1);
  else unsetenv("LD_PRELOAD");
}

static int is_program(void) {
  const char *want = getenv("TRITON_DEV_KEY_PROGRAM");
  if (!want || !*want) want = "tritonserver";
  char exe[4096];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) return 0;
  exe[len] = 0;
  const char *base = strrchr(exe, '/');
  return strcmp(base ? base + 1 : exe, want) == 0;
}

__attribute__((constructor)) static void triton_dev_key(int argc, char **argv, char **envp) {
  (void)envp;
  if (!is_program()) return;
  const char *file = getenv("TRITON_DEV_KEY_FILE");
  char key[256];
  ssize_t n = -1;
  if (file) {
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      n = read(fd, key, sizeof key - 1);
      close(fd);
    }
  }
  unsetenv("TRITON_DEV_KEY_FILE");
  restore_preload();
  if (n <= 0) return;
  key[n] = 0;
  size_t plen = strlen(PLACEHOLDER);
  int used = 0;
  for (int i = 1; i < argc && used < 2; i++) {
    size_t alen = strlen(argv[i]);
    if (alen < plen || strcmp(argv[i] + alen - plen, PLACEHOLDER) != 0) continue;
    size_t keep = alen - plen + 1;
    if (keep + (size_t)n + 1 > sizeof rewritten[used]) return;
    memcpy(rewritten[used], argv[i], keep);
    memcpy(rewritten[used] + keep, key, (size_t)n + 1);
    argv[i] = rewritten[used++];
  }
  memset(key, 0, sizeof key);
}
`;

export const KEY_SHIM_SOURCE = SOURCE.trimStart();

export interface KeyShimOptions {
  env?: NodeJS.ProcessEnv;
  /** The machine's architecture (`uname -m` style, for the cache name). */
  arch?: string;
}

function compilers(env: NodeJS.ProcessEnv): string[] {
  return [...new Set([env.CC, "cc", "gcc", "clang"].filter((c): c is string => !!c && c.trim() !== ""))];
}

/**
 * The compiled library in `home`, built on first use (a C compiler is needed once per machine and
 * source version). Compiled into a temp file and renamed, so two runs never see half a library.
 */
export async function ensureKeyShim(home: string, o: KeyShimOptions = {}): Promise<string> {
  const env = o.env ?? process.env;
  const arch = o.arch ?? os.arch();
  const version = createHash("sha256").update(KEY_SHIM_SOURCE).digest("hex").slice(0, 12);
  const dir = path.join(home, "lib", `key-${version}-${arch}`);
  const lib = path.join(dir, KEY_SHIM_LIBRARY);
  // Triton preloads this library: never one from a home another user can change.
  requireTrustedHome(home);
  if (fs.existsSync(lib)) return lib;
  await fsp.mkdir(dir, { recursive: true });
  requireTrustedHome(home);
  const tmp = path.join(dir, `.build-${process.pid}-${randomBytes(3).toString("hex")}`);
  await fsp.mkdir(tmp);
  try {
    const src = path.join(tmp, "key.c");
    await fsp.writeFile(src, KEY_SHIM_SOURCE);
    const out = path.join(tmp, KEY_SHIM_LIBRARY);
    const tried: string[] = [];
    for (const cc of compilers(env)) {
      // No stack protector or fortify: the library then needs nothing newer from glibc than
      // the NGC images have, since it is built on the host and also preloaded in containers.
      const r = await execa(
        cc,
        ["-O2", "-fPIC", "-shared", "-fno-stack-protector", "-U_FORTIFY_SOURCE", "-o", out, src],
        { reject: false, all: true, env, timeout: 60_000 },
      );
      if (r.exitCode === 0 && fs.existsSync(out)) {
        await fsp.rename(out, lib);
        return lib;
      }
      const failed = r as { code?: string; all?: string };
      tried.push(failed.code === "ENOENT" ? `${cc}: not found` : `${cc}: ${(failed.all ?? "").trim().split("\n")[0]}`);
    }
    throw new UserError(
      `triton-dev could not build its repository-key library (no working C compiler: ${tried.join("; ")})`,
      {
        hint:
          "triton-dev keeps the key of Triton's model-repository API off every command line with a small " +
          "preloaded library it compiles once. Install a C compiler (for example `apt install gcc`), or point " +
          "CC at one, and run `triton-dev up` again.",
      },
    );
  } finally {
    await fsp.rm(tmp, { recursive: true, force: true });
  }
}

export interface RunKey {
  header: string;
  value: string;
  /** The host folder holding the key file and the library. */
  dir: string;
}

/**
 * The run folder's key: an existing one is kept (a reattached server was started with it),
 * otherwise a new random one. The folder is the user's alone (0700, the key file 0600).
 */
export async function prepareRunKey(runDir: string, header: string, library: string): Promise<RunKey> {
  const dir = path.join(runDir, RUN_KEY_DIR);
  await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
  await fsp.chmod(dir, 0o700);
  const file = path.join(dir, KEY_FILE);
  let value = await readRunKey(runDir);
  if (value === undefined) {
    value = randomBytes(24).toString("hex");
    const tmp = `${file}.${process.pid}.tmp`;
    await fsp.writeFile(tmp, value, { mode: 0o600 });
    await fsp.rename(tmp, file);
  }
  const copy = path.join(dir, KEY_SHIM_LIBRARY);
  if (!fs.existsSync(copy)) {
    await fsp.copyFile(library, `${copy}.tmp`);
    await fsp.chmod(`${copy}.tmp`, 0o755);
    await fsp.rename(`${copy}.tmp`, copy);
  }
  return { header, value, dir };
}

/** The key a run folder's server was started with, if it has one. */
export async function readRunKey(runDir: string): Promise<string | undefined> {
  const text = await fsp.readFile(path.join(runDir, RUN_KEY_DIR, KEY_FILE), "utf8").catch(() => undefined);
  return text && /^[0-9a-f]{16,}$/.test(text) ? text : undefined;
}

/**
 * The environment that makes tritonserver take the key, for a process that sees the key folder
 * at `dir` (the mount point inside a container; a container's own LD_LIBRARY_PATH is left alone).
 */
export function keyShimEnv(dir: string, existingPreload?: string): Record<string, string> & { LD_PRELOAD: string } {
  const lib = path.posix.join(dir, KEY_SHIM_LIBRARY);
  return {
    LD_PRELOAD: existingPreload ? `${lib} ${existingPreload}` : lib,
    [KEY_FILE_ENV]: path.posix.join(dir, KEY_FILE),
  };
}

/**
 * The same for a host process. The loader splits LD_PRELOAD at spaces and colons, which a home
 * folder may contain, so the library is named and its folder put first on LD_LIBRARY_PATH.
 */
export function localKeyShimEnv(dir: string, base: NodeJS.ProcessEnv): Record<string, string> {
  return {
    LD_PRELOAD: base.LD_PRELOAD ? `${KEY_SHIM_LIBRARY} ${base.LD_PRELOAD}` : KEY_SHIM_LIBRARY,
    LD_LIBRARY_PATH: [dir, base.LD_LIBRARY_PATH].filter(Boolean).join(":"),
    [KEY_FILE_ENV]: path.join(dir, KEY_FILE),
  };
}
