import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { execa } from "execa";
import { z } from "zod";
import type { Paths } from "../../config/paths.js";
import { requireTrustedHome } from "../../config/home-trust.js";
import { UserError } from "../../errors.js";
import { log as rootLog } from "../../log/logger.js";
import { writeFileAtomic } from "../../state/atomic-write.js";
import { checkGlibc, glibcVersion } from "./glibc.js";
import { discoverPython, type PythonInfo } from "./python.js";

const log = rootLog.child("local:setup");

export const PYTRITON_VERSION = "0.7.0";
/** The python backend's utils use numpy 1.x APIs; 2.x is not what Triton 24.10 was built against. */
export const PIP_REQUIREMENTS = [`nvidia-pytriton==${PYTRITON_VERSION}`, "numpy>=1.22,<2"];

/**
 * Everything the local runtime needs to launch tritonserver, resolved once by setup and
 * recorded in the environment marker.
 */
export interface LocalEnvironment {
  python: PythonInfo;
  venv: string;
  venvPython: string;
  sitePackages: string;
  serverBin: string;
  libDirs: string[];
  backendDir: string;
  pytritonVersion: string;
  /** Site-packages of the user's Python that the venv sees (setup --with-site-packages). */
  inheritedSitePackages: string[];
}

const markerSchema = z.object({
  python: z.object({
    executable: z.string(),
    version: z.string(),
    minor: z.string(),
    libDir: z.string(),
    libName: z.string(),
  }),
  venv: z.string(),
  venvPython: z.string(),
  sitePackages: z.string(),
  serverBin: z.string(),
  libDirs: z.array(z.string()),
  backendDir: z.string(),
  pytritonVersion: z.string(),
  inheritedSitePackages: z.array(z.string()).default([]),
});

export type SetupStep = "python" | "glibc" | "venv" | "pip" | "backend" | "done";
export interface SetupProgress {
  step: SetupStep;
  message: string;
  /** pip's own output lines while installing. */
  line?: string;
}

export interface SetupOptions {
  paths: Paths;
  env?: NodeJS.ProcessEnv;
  onProgress?: (p: SetupProgress) => void;
  /** Reinstall even when the marker says the environment is complete. */
  force?: boolean;
  /**
   * Put the pinned packages and the stub back into an existing environment (setup --repair): the
   * venv is kept when its Python still is the one it was made with, pip reinstalls only what no
   * longer matches the pins (numpy 2 over 1.x), the python backend is copied again.
   */
  repair?: boolean;
  /**
   * Let the models see the packages of the Python setup found (e.g. torch with CUDA already
   * installed in the user's environment) through a .pth file, instead of an empty venv.
   */
  inheritSitePackages?: boolean;
}

/** The marker as setup wrote it, whether or not the files it names are still there. */
export async function readEnvironmentMarker(
  paths: Pick<Paths, "envMarker" | "home">,
): Promise<LocalEnvironment | undefined> {
  // The marker names what runs: it counts only in a home no other user can change.
  requireTrustedHome(paths.home);
  let raw: string;
  try {
    raw = await fsp.readFile(paths.envMarker, "utf8");
  } catch {
    return undefined;
  }
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return undefined;
  }
  const parsed = markerSchema.safeParse(json);
  return parsed.success ? parsed.data : undefined;
}

/** Read the marker; undefined when setup has not completed or the files it names are gone. */
export async function loadEnvironment(paths: Paths): Promise<LocalEnvironment | undefined> {
  const e = await readEnvironmentMarker(paths);
  if (!e) return undefined;
  const needed = [
    e.venvPython,
    e.serverBin,
    path.join(e.backendDir, "python", "triton_python_backend_stub"),
    path.join(e.backendDir, "python", "libtriton_python.so"),
  ];
  if (!needed.every((f) => fs.existsSync(f))) return undefined;
  if (e.pytritonVersion !== PYTRITON_VERSION) return undefined;
  return e;
}

/**
 * Idempotent: creates the managed venv, installs the pinned wheel and prepares a backend
 * directory whose python backend uses the stub built for the venv's Python.
 */
export async function ensureEnvironment(options: SetupOptions): Promise<LocalEnvironment> {
  const { paths } = options;
  const env = options.env ?? process.env;
  const progress = options.onProgress ?? (() => {});
  requireTrustedHome(paths.home);
  if (!options.force && !options.repair) {
    const existing = await loadEnvironment(paths);
    if (existing && (!options.inheritSitePackages || existing.inheritedSitePackages.length > 0)) {
      progress({ step: "done", message: `environment ready (${existing.venv}, Python ${existing.python.version})` });
      return existing;
    }
  }
  const previous = options.repair ? await readEnvironmentMarker(paths) : undefined;
  const python = await hostPython(env, previous, progress);

  const venvPython = path.join(paths.venv, "bin", "python");
  await ensureVenv(options, python, venvPython, progress);

  const inherit = options.inheritSitePackages || (previous?.inheritedSitePackages.length ?? 0) > 0;
  const inheritedSitePackages = inherit ? await inheritSitePackages(python.executable, venvPython) : [];
  if (inheritedSitePackages.length)
    progress({ step: "venv", message: `models will also see ${inheritedSitePackages.join(", ")}` });
  const requirements = await pinnedRequirements(venvPython, inheritedSitePackages);
  await pipInstall(venvPython, requirements, env, progress);
  if (options.repair) await repairNumpy(venvPython, requirements, env, progress);

  progress({ step: "backend", message: "preparing the python backend" });
  const { sitePackages, serverBin, backendDir } = await prepareBackend(paths, venvPython, python);
  const result: LocalEnvironment = {
    python,
    venv: paths.venv,
    venvPython,
    sitePackages,
    serverBin,
    libDirs: [path.join(sitePackages, "nvidia_pytriton.libs"), python.libDir],
    backendDir,
    pytritonVersion: PYTRITON_VERSION,
    inheritedSitePackages,
  };
  await writeFileAtomic(paths.envMarker, JSON.stringify(result, null, 2) + "\n", 0o644);
  log.info("environment ready", { venv: paths.venv });
  progress({ step: "done", message: `environment ready (${paths.venv}, Python ${python.version})` });
  return result;
}

type Progress = (p: SetupProgress) => void;

/** glibc checked, and the Python the venv is made from. */
async function hostPython(
  env: NodeJS.ProcessEnv,
  previous: LocalEnvironment | undefined,
  progress: Progress,
): Promise<PythonInfo> {
  progress({ step: "glibc", message: "checking glibc" });
  const glibc = checkGlibc(glibcVersion());
  progress({ step: "python", message: "looking for Python 3.8-3.12 with a shared libpython" });
  // A repair keeps the Python the environment was made with while it is still there: another
  // one found on PATH meanwhile would need a new venv, which is what --force is for.
  const python =
    (previous &&
      (await discoverPython({ env: { ...env, TRITON_DEV_PYTHON: previous.python.executable } }).catch(
        () => undefined,
      ))) ||
    (await discoverPython({ env }));
  progress({ step: "python", message: `using Python ${python.version} (${python.executable}), glibc ${glibc}` });
  return python;
}

/** The venv, made afresh on --force, when its Python does not answer, or when a repair finds it on another version. */
async function ensureVenv(
  options: SetupOptions,
  python: PythonInfo,
  venvPython: string,
  progress: Progress,
): Promise<void> {
  const { paths } = options;
  const venvMinor = fs.existsSync(venvPython) ? await pythonMinor(venvPython) : undefined;
  if (options.repair && venvMinor !== undefined && venvMinor !== python.minor)
    progress({ step: "venv", message: `the venv runs Python ${venvMinor}, not ${python.minor}: recreating it` });
  if (options.force || venvMinor === undefined || (options.repair && venvMinor !== python.minor)) {
    progress({ step: "venv", message: `creating virtual environment ${paths.venv}` });
    await createVenv(paths, python);
  }
}

async function createVenv(paths: Paths, python: PythonInfo): Promise<void> {
  await fsp.rm(paths.venv, { recursive: true, force: true });
  await fsp.mkdir(path.dirname(paths.venv), { recursive: true });
  // Made now, or found made by someone else since ensureEnvironment checked the home (mkdir takes an existing one).
  requireTrustedHome(paths.home);
  const r = await execa(python.executable, ["-m", "venv", paths.venv], { reject: false, all: true });
  if (r.exitCode !== 0) {
    await fsp.rm(paths.venv, { recursive: true, force: true });
    throw new UserError(
      `could not create a virtual environment with ${python.executable}: ${lastLines(String(r.all), 3)}`,
      {
        hint: `Install the venv module for Python ${python.minor} (Debian/Ubuntu: \`apt-get install python${python.minor}-venv\`).`,
      },
    );
  }
}

/**
 * The python-backend stub is compiled against numpy 1.x's C layout: with numpy 2 it misreads
 * BYTES tensors and crashes. An inherited numpy 1.x is kept; a 2.x is shadowed by a 1.x in the
 * venv (packages built against numpy 2, torch among them, still run on 1.x).
 */
async function pinnedRequirements(venvPython: string, inheritedSitePackages: string[]): Promise<string[]> {
  const hasNumpy =
    inheritedSitePackages.length > 0 &&
    (
      await execa(
        venvPython,
        ["-c", "import numpy, sys; sys.exit(0 if int(numpy.__version__.split('.')[0]) < 2 else 1)"],
        { reject: false },
      )
    ).exitCode === 0;
  return hasNumpy ? PIP_REQUIREMENTS.filter((r) => !r.startsWith("numpy")) : PIP_REQUIREMENTS;
}

async function pipInstall(
  venvPython: string,
  requirements: string[],
  env: NodeJS.ProcessEnv,
  progress: Progress,
): Promise<void> {
  progress({ step: "pip", message: `installing ${requirements.join(" ")} (about 150 MB on first use)` });
  // --no-deps: we launch the wheel's tritonserver binary directly, so PyTriton's own Python
  // dependencies (grpcio, tritonclient, ...) would only cost download time and disk.
  const pip = execa(
    venvPython,
    ["-m", "pip", "install", "--no-deps", "--disable-pip-version-check", "--progress-bar", "off", ...requirements],
    {
      reject: false,
      all: true,
      env: { ...env, PIP_NO_INPUT: "1" },
    },
  );
  const pipLines: string[] = [];
  pip.all?.on("data", (chunk: Buffer) => {
    for (const line of chunk.toString().split("\n")) {
      const l = line.trimEnd();
      if (!l) continue;
      pipLines.push(l);
      progress({ step: "pip", message: "pip", line: l });
    }
  });
  const pr = await pip;
  if (pr.exitCode !== 0) {
    throw new UserError(
      `pip could not install ${requirements.join(" ")} (exit ${pr.exitCode}): ${lastLines(pipLines.join("\n"), 4)}`,
      {
        hint: "Check that this machine reaches the Python package index (or set PIP_INDEX_URL / PIP_FIND_LINKS to a mirror or a folder holding the wheels), then run `triton-dev setup` again.",
      },
    );
  }
}

/** A repair's numpy that matched the pin, so pip kept it, but whose files are broken: reinstalled. */
async function repairNumpy(
  venvPython: string,
  requirements: string[],
  env: NodeJS.ProcessEnv,
  progress: Progress,
): Promise<void> {
  if (await numpyImports(venvPython)) return;
  const numpyPin = requirements.find((r) => r.startsWith("numpy"));
  if (!numpyPin) return;
  progress({ step: "pip", message: `numpy does not import: reinstalling ${numpyPin}` });
  const r = await execa(
    venvPython,
    [
      "-m",
      "pip",
      "install",
      "--no-deps",
      "--force-reinstall",
      "--disable-pip-version-check",
      "--progress-bar",
      "off",
      numpyPin,
    ],
    { reject: false, all: true, env: { ...env, PIP_NO_INPUT: "1" } },
  );
  if (r.exitCode !== 0)
    throw new UserError(`pip could not reinstall ${numpyPin}: ${lastLines(String(r.all), 4)}`, {
      hint: "Check that this machine reaches the Python package index, or run `triton-dev setup --force`.",
    });
}

/**
 * The python backend runs the stub that sits beside libtriton_python.so, so the backend
 * directory is assembled per Python version rather than pointing into the wheel.
 */
async function prepareBackend(
  paths: Paths,
  venvPython: string,
  python: PythonInfo,
): Promise<Pick<LocalEnvironment, "sitePackages" | "serverBin" | "backendDir">> {
  const sitePackages = (
    await execa(venvPython, ["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
  ).stdout.trim();
  const tritonDir = path.join(sitePackages, "pytriton", "tritonserver");
  const serverBin = path.join(tritonDir, "bin", "tritonserver");
  const stub = path.join(tritonDir, "python_backend_stubs", python.minor, "triton_python_backend_stub");
  for (const f of [serverBin, stub]) {
    if (!fs.existsSync(f)) {
      throw new UserError(`the installed nvidia-pytriton wheel lacks ${f}`, {
        hint: "Run `triton-dev setup --force` to reinstall; if it persists, the wheel for this platform does not ship Triton (only linux x86_64 and aarch64 do).",
      });
    }
  }
  const backendDir = path.join(paths.backends, `py${python.minor}`);
  const pyBackend = path.join(backendDir, "python");
  await fsp.rm(backendDir, { recursive: true, force: true });
  await fsp.mkdir(pyBackend, { recursive: true });
  for (const f of ["libtriton_python.so", "triton_python_backend_utils.py"]) {
    await fsp.copyFile(path.join(tritonDir, "backends", "python", f), path.join(pyBackend, f));
  }
  await fsp.copyFile(stub, path.join(pyBackend, "triton_python_backend_stub"));
  await fsp.chmod(path.join(pyBackend, "triton_python_backend_stub"), 0o755);
  return { sitePackages, serverBin, backendDir };
}

async function pythonMinor(python: string): Promise<string | undefined> {
  const r = await execa(python, ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"], { reject: false });
  return r.exitCode === 0 ? r.stdout.trim() : undefined;
}

async function numpyImports(python: string): Promise<boolean> {
  return (await execa(python, ["-c", "import numpy"], { reject: false })).exitCode === 0;
}

export function lastLines(text: string, n: number): string {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .slice(-n)
    .join(" | ");
}

/**
 * Compile the staged model.py files with the venv's Python before Triton imports them. The
 * python-backend stub ignores PYTHONDONTWRITEBYTECODE and would write __pycache__ into the
 * version folder on first import, which bumps its mtime and makes poll mode reload every
 * python model right after it loaded. With a valid .pyc already there, nothing is written.
 */
export async function precompilePython(e: Pick<LocalEnvironment, "venvPython">, repository: string): Promise<void> {
  const r = await execa(e.venvPython, ["-m", "compileall", "-q", repository], { reject: false, all: true });
  // A syntax error is the model's problem, reported by Triton (and lint) where it belongs.
  if (r.exitCode !== 0) log.debug("compileall reported problems", { output: lastLines(String(r.all), 5) });
}

/** Add the site-packages of `sourcePython` to the venv through a .pth file; returns them. */
async function inheritSitePackages(sourcePython: string, venvPython: string): Promise<string[]> {
  const q =
    "import json, site, sysconfig; p = sysconfig.get_paths(); print(json.dumps(sorted({p['purelib'], p['platlib'], *site.getsitepackages()})))";
  const dirs = (JSON.parse((await execa(sourcePython, ["-c", q])).stdout.trim()) as string[]).filter((d) =>
    fs.existsSync(d),
  );
  const venvSite = (
    await execa(venvPython, ["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
  ).stdout.trim();
  await fsp.writeFile(path.join(venvSite, "triton_dev_inherited.pth"), dirs.join("\n") + "\n");
  return dirs;
}
