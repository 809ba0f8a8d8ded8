import fs from "node:fs";
import path from "node:path";
import { execa } from "execa";
import { UserError } from "../../errors.js";

export interface PythonInfo {
  executable: string;
  version: string;
  /** "3.11" */
  minor: string;
  /** Directory holding the shared libpython the python-backend stub links against. */
  libDir: string;
  libName: string;
}

export const SUPPORTED_MINORS = ["3.12", "3.11", "3.10", "3.9", "3.8"] as const;

/** What a candidate interpreter reports about itself. */
export interface PythonProbe {
  executable: string;
  version: string;
  libDir: string;
  libPl: string;
  multiarch: string;
  instSoName: string;
  enableShared: boolean;
}

export type ProbeFn = (candidate: string) => Promise<PythonProbe | undefined>;

const PROBE_SCRIPT = [
  "import json, sys, sysconfig",
  "v = sysconfig.get_config_var",
  "print(json.dumps({'executable': sys.executable, 'version': '%d.%d.%d' % sys.version_info[:3],",
  " 'libDir': v('LIBDIR') or '', 'libPl': v('LIBPL') or '', 'multiarch': v('MULTIARCH') or '',",
  " 'instSoName': v('INSTSONAME') or '', 'enableShared': bool(v('Py_ENABLE_SHARED'))}))",
].join("\n");

export const probePython: ProbeFn = async (candidate) => {
  try {
    const r = await execa(candidate, ["-c", PROBE_SCRIPT], { timeout: 15_000, reject: false });
    if (r.exitCode !== 0) return undefined;
    return JSON.parse(String(r.stdout).trim()) as PythonProbe;
  } catch {
    return undefined;
  }
};

/** The directory holding libpythonX.Y.so.1.0 for this interpreter, or undefined. */
export function findLibpython(
  p: PythonProbe,
  exists: (f: string) => boolean = fs.existsSync,
): { libDir: string; libName: string } | undefined {
  const minor = p.version.split(".").slice(0, 2).join(".");
  const names = [p.instSoName, `libpython${minor}.so.1.0`, `libpython${minor}.so`].filter(
    (n) => n && n.includes(".so"),
  );
  const dirs = [p.libDir, p.libPl, p.multiarch ? `/usr/lib/${p.multiarch}` : "", "/usr/lib", "/usr/local/lib"].filter(
    Boolean,
  );
  for (const d of dirs) for (const n of names) if (exists(path.join(d, n))) return { libDir: d, libName: n };
  return undefined;
}

export interface DiscoverOptions {
  env?: NodeJS.ProcessEnv;
  probe?: ProbeFn;
  exists?: (f: string) => boolean;
}

/**
 * Find a Python 3.8-3.12 with a shared libpython. TRITON_DEV_PYTHON wins when set (and is
 * checked strictly); otherwise the newest supported version found on PATH.
 */
export async function discoverPython(options: DiscoverOptions = {}): Promise<PythonInfo> {
  const env = options.env ?? process.env;
  const probe = options.probe ?? probePython;
  const exists = options.exists ?? fs.existsSync;
  const explicit = env.TRITON_DEV_PYTHON;
  const candidates = explicit ? [explicit] : [...SUPPORTED_MINORS.map((m) => `python${m}`), "python3"];
  const rejected: string[] = [];
  for (const c of candidates) {
    const p = await probe(c);
    if (!p) {
      if (explicit) rejected.push(`${c}: could not run it`);
      continue;
    }
    const minor = p.version.split(".").slice(0, 2).join(".");
    if (!(SUPPORTED_MINORS as readonly string[]).includes(minor)) {
      rejected.push(`${c} is Python ${p.version} (the python backend ships stubs for 3.8 to 3.12)`);
      continue;
    }
    const lib = findLibpython(p, exists);
    if (!lib) {
      rejected.push(`${c} (Python ${p.version}) has no shared libpython${minor}.so`);
      continue;
    }
    return { executable: p.executable, version: p.version, minor, ...lib };
  }
  const where = explicit ? `TRITON_DEV_PYTHON=${explicit}` : "PATH";
  throw new UserError(
    rejected.length
      ? `no usable Python found on ${where}: ${rejected.join("; ")}`
      : `no Python 3.8-3.12 found on ${where}`,
    {
      hint:
        "Install Python 3.8-3.12 with its shared library (Debian/Ubuntu: `apt-get install python3.11 python3.11-venv libpython3.11`; " +
        "pyenv: `PYTHON_CONFIGURE_OPTS=--enable-shared pyenv install 3.11`), or point TRITON_DEV_PYTHON at one.",
    },
  );
}
