import fs from "node:fs";
import path from "node:path";
import { execa } from "execa";
import type { Paths } from "../../config/paths.js";
import { readEnvironmentMarker, type LocalEnvironment } from "./environment.js";

/** What puts it right: `repair` reinstalls the pins and the stub, `force` rebuilds the venv, `setup` makes one. */
export type EnvironmentFix = "setup" | "repair" | "force";

export interface EnvironmentProblem {
  problem: string;
  fix: EnvironmentFix;
}

export interface EnvironmentHealth {
  environment?: LocalEnvironment;
  problems: EnvironmentProblem[];
  /** What the managed Python reported, when it ran. */
  python?: string;
  numpy?: string;
}

const PROBE = [
  "import json, sys, importlib.metadata as m",
  "out = {'version': '%d.%d.%d' % sys.version_info[:3]}",
  "try: out['numpy'] = m.version('numpy')",
  "except m.PackageNotFoundError: pass",
  "if len(sys.argv) > 1:",
  "    try:",
  "        import numpy",
  "    except Exception as e:",
  "        out['numpyError'] = '%s: %s' % (type(e).__name__, e)",
  "print(json.dumps(out))",
].join("\n");

/** The command that fixes `fix`. */
export function fixCommand(fix: EnvironmentFix): string {
  return fix === "setup"
    ? "triton-dev setup"
    : fix === "repair"
      ? "triton-dev setup --repair"
      : "triton-dev setup --force";
}

/** The stub of this Python version inside the installed wheel: what the backend folder should hold. */
function wheelStub(e: LocalEnvironment, minor: string): string {
  return path.join(
    e.sitePackages,
    "pytriton",
    "tritonserver",
    "python_backend_stubs",
    minor,
    "triton_python_backend_stub",
  );
}

function sameFile(a: string, b: string): boolean {
  try {
    const [sa, sb] = [fs.statSync(a), fs.statSync(b)];
    return sa.size === sb.size && fs.readFileSync(a).equals(fs.readFileSync(b));
  } catch {
    return false;
  }
}

/**
 * Whether the managed environment still matches the python backend stub: its Python the one the
 * stub was built for, numpy 1.x (the stub reads tensors through numpy 1.x's C layout; with 2.x a
 * BYTES input crashes it), the stub and server in place. `importNumpy` also imports it (doctor),
 * which costs a tenth of a second more than reading its version (`up`).
 */
export async function checkManagedEnvironment(
  paths: Pick<Paths, "envMarker" | "venv" | "home">,
  options: { importNumpy?: boolean } = {},
): Promise<EnvironmentHealth> {
  const e = await readEnvironmentMarker(paths);
  if (!e) return { problems: [{ problem: `no managed environment at ${paths.venv}`, fix: "setup" }] };
  const problems: EnvironmentProblem[] = [];
  const r = await execa(e.venvPython, ["-c", PROBE, ...(options.importNumpy ? ["import"] : [])], {
    reject: false,
    all: true,
  }).catch(() => undefined);
  if (!r || r.exitCode !== 0) {
    problems.push({
      problem: `the managed Python ${e.venvPython} does not run${r ? `: ${String(r.all).trim().split("\n").slice(-1)[0]}` : ""}`,
      fix: "force",
    });
    return { environment: e, problems };
  }
  const probe = JSON.parse(r.stdout) as { version: string; numpy?: string; numpyError?: string };
  const minor = probe.version.split(".").slice(0, 2).join(".");
  if (minor !== e.python.minor) {
    problems.push({
      problem: `the managed venv runs Python ${probe.version}, but its python backend stub is built for ${e.python.minor}`,
      fix: "force",
    });
  }
  if (!probe.numpy) problems.push({ problem: "numpy is not installed in the managed environment", fix: "repair" });
  else if (Number(probe.numpy.split(".")[0]) !== 1) {
    problems.push({
      problem: `numpy ${probe.numpy} is installed in the managed environment, but the python backend stub is built for numpy 1.x (BYTES tensors crash it, others come back wrong)`,
      fix: "repair",
    });
  } else if (probe.numpyError) {
    problems.push({ problem: `numpy ${probe.numpy} does not import: ${probe.numpyError}`, fix: "repair" });
  }
  const stub = path.join(e.backendDir, "python", "triton_python_backend_stub");
  if (!fs.existsSync(stub)) problems.push({ problem: `the python backend stub ${stub} is missing`, fix: "repair" });
  else if (minor === e.python.minor && fs.existsSync(wheelStub(e, minor)) && !sameFile(stub, wheelStub(e, minor)))
    problems.push({ problem: `${stub} is not the stub the wheel ships for Python ${minor}`, fix: "repair" });
  for (const f of [path.join(e.backendDir, "python", "libtriton_python.so"), e.serverBin]) {
    if (!fs.existsSync(f)) problems.push({ problem: `${f} is missing`, fix: f === e.serverBin ? "force" : "repair" });
  }
  return { environment: e, problems, python: probe.version, ...(probe.numpy ? { numpy: probe.numpy } : {}) };
}

/** The strongest fix among the problems: a rebuild also repairs. */
export function strongestFix(problems: EnvironmentProblem[]): EnvironmentFix | undefined {
  for (const f of ["setup", "force", "repair"] as const) if (problems.some((p) => p.fix === f)) return f;
  return undefined;
}
