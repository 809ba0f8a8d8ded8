import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";

/**
 * Wheels for the environment tests, made here so no test depends on a package index: pure-python
 * ones from a folder of sources (what `pip wheel` of a one-module project makes, without needing
 * setuptools from the index), and an installed distribution packed back into its wheel (numpy
 * for `setup --repair`). Written by Python's own zipfile, with a correct RECORD, so pip installs
 * them like any other. The writer is a script of its own, so bench/real-models.mjs builds the same
 * wheels.
 */
const WHEEL_SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), "make-wheel.py");

export interface SourceWheel {
  name: string;
  version: string;
  /** A folder whose files become the wheel's contents (`tdgreet/__init__.py`). */
  source: string;
  requires?: string[];
  requiresPython?: string;
}

/** Build a pure-python wheel into `out`; returns its path. */
export async function buildWheel(python: string, out: string, w: SourceWheel): Promise<string> {
  await fsp.mkdir(out, { recursive: true });
  const r = await execa(python, [WHEEL_SCRIPT], { input: JSON.stringify({ kind: "source", out, ...w }) });
  return r.stdout.trim();
}

/** A one-module pure-python wheel written from `code` (`<name>/__init__.py`). */
export async function moduleWheel(
  python: string,
  out: string,
  w: Omit<SourceWheel, "source"> & { code: string },
): Promise<string> {
  const src = await fsp.mkdtemp(path.join(out, `.src-${w.name}-`));
  try {
    const pkg = path.join(src, w.name.replace(/-/g, "_"));
    await fsp.mkdir(pkg, { recursive: true });
    await fsp.writeFile(path.join(pkg, "__init__.py"), w.code);
    return await buildWheel(python, out, { ...w, source: src });
  } finally {
    await fsp.rm(src, { recursive: true, force: true });
  }
}

/** Pack a distribution installed for `python` back into a wheel in `out` (its own platform tag). */
export async function repackInstalled(python: string, name: string, out: string): Promise<string> {
  await fsp.mkdir(out, { recursive: true });
  const r = await execa(python, [WHEEL_SCRIPT], { input: JSON.stringify({ kind: "installed", name, out }) });
  return r.stdout.trim();
}

/** The managed environment's Python, as setup recorded it in TRITON_DEV_HOME. */
export function managedPython(env: NodeJS.ProcessEnv = process.env): {
  python: string;
  sitePackages: string;
  home: string;
} {
  const home = env.TRITON_DEV_HOME;
  if (!home) throw new Error("TRITON_DEV_HOME is not set: the environment tests need the managed environment");
  const marker = JSON.parse(fs.readFileSync(path.join(home, "environment.json"), "utf8")) as {
    venvPython: string;
    sitePackages: string;
  };
  return { python: marker.venvPython, sitePackages: marker.sitePackages, home };
}

/** pip's settings for a test: only the given wheel folder, never an index. */
export function offlinePip(wheels: string): NodeJS.ProcessEnv {
  return { PIP_NO_INDEX: "1", PIP_FIND_LINKS: wheels, PIP_CONFIG_FILE: "/dev/null" };
}
