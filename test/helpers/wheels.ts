import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { execa } from "execa";

/**
 * Wheels for the environment tests, made here so no test depends on a package index: pure-python
 * ones from a folder of sources (what `pip wheel` of a one-module project makes, without needing
 * setuptools from the index), and an installed distribution packed back into its wheel (numpy
 * for `setup --repair`). Written by Python's own zipfile, with a correct RECORD, so pip installs
 * them like any other.
 */
const WHEEL_SCRIPT = String.raw`
import base64, hashlib, json, os, sys, zipfile
spec = json.load(sys.stdin)
def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
def write(path, entries, tag):
    di = spec["name"].replace("-", "_") + "-" + spec["version"] + ".dist-info"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        record = []
        for name, data in entries:
            if name.endswith(".dist-info/RECORD"):
                continue
            z.writestr(name, data)
            record.append("%s,%s,%d" % (name, digest(data), len(data)))
        record.append(di + "/RECORD,,")
        z.writestr(di + "/RECORD", "\n".join(record) + "\n")
if spec["kind"] == "source":
    name, version = spec["name"], spec["version"]
    di = name.replace("-", "_") + "-" + version + ".dist-info"
    meta = "Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version)
    if spec.get("requiresPython"):
        meta += "Requires-Python: %s\n" % spec["requiresPython"]
    for r in spec.get("requires", []):
        meta += "Requires-Dist: %s\n" % r
    entries = []
    root = spec["source"]
    for d, _, files in os.walk(root):
        for f in sorted(files):
            if f.endswith(".pyc"):
                continue
            full = os.path.join(d, f)
            entries.append((os.path.relpath(full, root).replace(os.sep, "/"), open(full, "rb").read()))
    entries.append((di + "/METADATA", meta.encode()))
    entries.append((di + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: triton-dev-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    out = os.path.join(spec["out"], "%s-%s-py3-none-any.whl" % (name.replace("-", "_"), version))
    write(out, entries, "py3-none-any")
else:
    import importlib.metadata as m
    dist = m.distribution(spec["name"])
    spec["version"] = dist.version
    entries = []
    for f in dist.files:
        p = f.locate()
        # Scripts installed outside site-packages (../../../bin/f2py) are left out: a wheel would
        # carry them under .data/scripts, and nothing here runs them.
        if str(f).startswith(".."):
            continue
        if os.path.isfile(p) and not str(f).endswith(".pyc") and "__pycache__" not in str(f):
            entries.append((str(f).replace(os.sep, "/"), open(p, "rb").read()))
    wheel = dist.read_text("WHEEL") or ""
    tag = [l.split(":", 1)[1].strip() for l in wheel.splitlines() if l.startswith("Tag:")][0]
    out = os.path.join(spec["out"], "%s-%s-%s.whl" % (dist.metadata["Name"].replace("-", "_"), dist.version, tag))
    write(out, entries, tag)
print(out)
`;

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
  const r = await execa(python, ["-c", WHEEL_SCRIPT], { input: JSON.stringify({ kind: "source", out, ...w }) });
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
  const r = await execa(python, ["-c", WHEEL_SCRIPT], { input: JSON.stringify({ kind: "installed", name, out }) });
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
