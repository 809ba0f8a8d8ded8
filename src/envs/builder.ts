import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { REAL_CLOCK, type Clock } from "../clock.js";
import { UserError } from "../errors.js";
import { log as rootLog } from "../log/logger.js";
import type { EnvFinding } from "./finding.js";
import { writeFileAtomic } from "../state/atomic-write.js";
import { classifyPipFailure, errorExcerpt, type PipFailure } from "./pip-errors.js";
import {
  checkRequirementsFile,
  pipRequirementsText,
  userPipSources,
  type RequirementsCheck,
  type ResolvedRequirements,
} from "./requirements-check.js";
import {
  environmentKey,
  requirementSpec,
  REQUIREMENTS_FILE,
  type EnvironmentBase,
  type RequirementLine,
} from "./requirements.js";

/** execa, loaded when something is built or probed: `lint` only looks environments up, and starts faster without it. */
const loadExeca = async () => (await import("execa")).execa;

const log = rootLog.child("envs");

/** The managed environment every model environment is layered on. */
export interface BaseInterpreter {
  /** Its Python, the one the python backend stub embeds: runs pip's dry run and creates the environments. */
  python: string;
  /** Its site-packages: every environment sees them (the stub's numpy among them) under its own. */
  sitePackages: string;
}

export interface EnvironmentProgress {
  model: string;
  /** The environment's content address. */
  key: string;
  message: string;
  /** One line of pip's output while it installs. */
  line?: string;
}

export interface EnvironmentBuilderOptions {
  /** Where environments live, one folder per content address (`<home>/envs`). */
  root: string;
  base: BaseInterpreter;
  /** pip runs with it: the user's pip configuration (PIP_INDEX_URL, PIP_FIND_LINKS, pip.conf) applies. */
  env?: NodeJS.ProcessEnv;
  onProgress?: (p: EnvironmentProgress) => void;
  /** The packages the stub itself imports, pinned at the managed environment's versions. */
  stubPackages?: string[];
  /** How long pip may take for one environment (a large wheel over a slow link takes minutes). */
  pipTimeoutMs?: number;
  /** How long to wait for another triton-dev building the same environment. */
  lockWaitMs?: number;
  /**
   * How often a build says it is still going, with its time so far: pip prints nothing while it
   * downloads a large wheel or builds one, and a cold environment takes 10-90 s.
   */
  progressEveryMs?: number;
  /** The time the lock wait and the progress reports run on (../clock.ts); build times are real time. */
  clock?: Clock;
}

export interface BuiltEnvironment {
  dir: string;
  key: string;
  /** Found complete in the cache: nothing was run. */
  cached: boolean;
  /** Time spent here (resolving and installing, or finding it cached). */
  ms: number;
  /** What pip installed into it (`tdhello==1.0`), beyond what the managed environment provides. */
  packages: string[];
}

export interface EnvironmentRequest {
  model: string;
  /** The requirements file to install (the staged copy's). */
  file: string;
  /** The same file as the user knows it, for messages. */
  userFile: string;
  /** Told once when the environment is built (not found in the cache), with what it installs. */
  onBuild?: (what: string) => void;
}

/**
 * An environment that could not be built. `refused`: the requirements conflict with the stub
 * (its numpy, its Python) and nothing was installed; otherwise pip failed. Either way the model's
 * last good version keeps serving; `diagnostics` point at the requirements.txt line.
 */
export class EnvironmentError extends UserError {
  override name = "EnvironmentError";
  readonly model: string;
  readonly refused: boolean;
  readonly diagnostics: EnvFinding[];
  constructor(
    model: string,
    message: string,
    options: { hint: string; refused: boolean; diagnostics: EnvFinding[]; cause?: unknown },
  ) {
    super(message, { hint: options.hint, cause: options.cause });
    this.model = model;
    this.refused = options.refused;
    this.diagnostics = options.diagnostics;
  }
}

/**
 * Where the model environments built from requirements.txt live: beside the managed one (`home`),
 * shared by every run; TRITON_DEV_ENVS_DIR moves them (a faster disk, or a test's own cache).
 */
export function environmentsRootIn(home: string, env: NodeJS.ProcessEnv): string {
  return env.TRITON_DEV_ENVS_DIR ? path.resolve(env.TRITON_DEV_ENVS_DIR) : path.join(home, "envs");
}

/** The marker written last into a complete environment. */
const MARKER = ".triton-dev-env.json";
/** Loads the managed site-packages after the environment's own (their .pth files too). */
const BASE_PTH = "_triton_dev_base.pth";

/** pip settings that would install somewhere else than the environment being built. */
const REDIRECTING_PIP_VARS = ["PIP_TARGET", "PIP_PREFIX", "PIP_ROOT", "PIP_USER", "PIP_EDITABLE"];

/**
 * Builds one virtual environment per distinct requirements set, content-addressed by the
 * normalized requirements and the stub's Python, ABI and pinned packages, and reuses it across
 * runs and models. Each is a venv of the stub's Python whose site-packages load the managed
 * environment's after their own: the stub keeps its numpy, the model gets its packages. Before
 * anything is created, pip resolves the requirements against the managed environment with the
 * stub's packages pinned as constraints (`--dry-run`), so a conflict is refused with nothing built.
 */
export class EnvironmentBuilder {
  private basePromise: Promise<EnvironmentBase> | undefined;
  private readonly inFlight = new Map<string, Promise<BuiltEnvironment>>();
  private readonly env: NodeJS.ProcessEnv;
  private readonly clock: Clock;

  constructor(private readonly o: EnvironmentBuilderOptions) {
    this.env = pipEnv(o.env ?? process.env);
    this.clock = o.clock ?? REAL_CLOCK;
  }

  /** The managed environment's Python: what a model without a requirements.txt runs in. */
  get basePython(): string {
    return this.o.base.python;
  }

  /** The stub's Python and pinned packages, asked once from the managed environment. */
  base(): Promise<EnvironmentBase> {
    this.basePromise ??= probeBase(this.o.base, this.o.stubPackages ?? ["numpy"]);
    return this.basePromise;
  }

  /**
   * The environment for a requirements file if it is built, without building it (lint runs a
   * model's code in it, but never installs anything): `empty` when the file lists nothing,
   * `not-built` too when the file is refused (lint reports why).
   */
  async find(file: string): Promise<{ dir: string; python: string } | "empty" | "not-built"> {
    const resolved = this.check(file).resolved;
    if (!resolved) return "not-built";
    if (resolved.requirements.length === 0) return "empty";
    const dir = path.join(this.o.root, environmentKey(resolved.identity, await this.base()));
    return (await readMarker(dir)) ? { dir, python: path.join(dir, "bin", "python") } : "not-built";
  }

  /** The environment for a requirements file, built when not cached; undefined when it lists nothing. */
  async build(req: EnvironmentRequest): Promise<BuiltEnvironment | undefined> {
    const started = Date.now();
    const resolved = this.refuseRedirects(req);
    // Options alone (an index the user's configuration sets) install nothing.
    if (resolved.requirements.length === 0) return undefined;
    const normalized = resolved.identity;
    const base = await this.base();
    const key = environmentKey(normalized, base);
    const dir = path.join(this.o.root, key);
    const cached = await readMarker(dir);
    if (cached) {
      this.progress(req.model, key, `reusing environment ${key} (${describe(cached.packages)})`);
      return { dir, key, cached: true, ms: Date.now() - started, packages: cached.packages };
    }
    let p = this.inFlight.get(key);
    if (!p) {
      p = this.buildLocked(req, resolved, base, key, dir).finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, p);
    }
    const built = await p;
    return { ...built, ms: Date.now() - started };
  }

  /** The one reading of a requirements file (requirements-check.ts), as lint makes it, with this pip's settings. */
  private check(file: string, model?: string, userDir?: string): RequirementsCheck {
    const pip = userPipSources({
      env: this.o.env ?? process.env,
      sitePrefix: path.dirname(path.dirname(this.o.base.python)),
    });
    return checkRequirementsFile(file, path.dirname(file), {
      pip,
      env: this.env,
      ...(model ? { model } : {}),
      ...(userDir ? { userDir } : {}),
    });
  }

  /**
   * Anything in the file outside the accepted grammar, or pointing pip elsewhere, refuses the
   * model before pip runs; the sources the user's own pip configuration allows are said.
   */
  private refuseRedirects(req: EnvironmentRequest): ResolvedRequirements {
    const stagedDir = path.dirname(req.file);
    const userDir = path.dirname(req.userFile);
    const check = this.check(req.file, req.model, userDir);
    const asUser = (f: string) => (f.startsWith(stagedDir) ? userDir + f.slice(stagedDir.length) : f);
    for (const a of check.allowed) {
      this.progress(
        req.model,
        "",
        `${path.relative(userDir, asUser(a.file))}:${a.line} installs from ${a.value} (--${a.option}, allowed: your pip configuration sets it in ${a.origin})`,
      );
    }
    if (check.resolved) return check.resolved;
    const diagnostics = check.diagnostics.map((d) => ({ ...d, file: asUser(d.file) }));
    const first = diagnostics[0]!;
    throw new EnvironmentError(
      req.model,
      `${req.model}: ${path.basename(req.userFile)} is refused before pip reads it: ${first.file}:${first.line}:${first.column}: ${first.message}${diagnostics.length > 1 ? ` (and ${diagnostics.length - 1} more)` : ""}`,
      { hint: first.hint ?? "", refused: true, diagnostics },
    );
  }

  private progress(model: string, key: string, message: string, line?: string): void {
    this.o.onProgress?.({ model, key, message, ...(line !== undefined ? { line } : {}) });
  }

  /** One builder per environment across processes: a lock file naming the pid, taken over when that pid is gone. */
  private async buildLocked(
    req: EnvironmentRequest,
    resolved: ResolvedRequirements,
    base: EnvironmentBase,
    key: string,
    dir: string,
  ): Promise<BuiltEnvironment> {
    await fsp.mkdir(this.o.root, { recursive: true });
    const lock = path.join(this.o.root, `${key}.lock`);
    const deadline = this.clock.now() + (this.o.lockWaitMs ?? 30 * 60_000);
    for (;;) {
      try {
        await fsp.writeFile(lock, String(process.pid), { flag: "wx" });
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      }
      const holder = Number(await fsp.readFile(lock, "utf8").catch(() => ""));
      if (!holder || !pidAlive(holder)) {
        await fsp.rm(lock, { force: true });
        continue;
      }
      const done = await readMarker(dir);
      if (done) return { dir, key, cached: true, ms: 0, packages: done.packages };
      if (this.clock.now() > deadline) {
        throw new UserError(`another triton-dev (pid ${holder}) has been building environment ${dir} for too long`, {
          hint: `Wait for it or stop it, then save ${req.userFile} again (remove ${lock} if that process is not triton-dev).`,
        });
      }
      this.progress(req.model, key, `waiting for pid ${holder}, which builds the same environment`);
      await this.clock.sleep(250);
    }
    try {
      // Built by someone else while the lock was free.
      const done = await readMarker(dir);
      if (done) return { dir, key, cached: true, ms: 0, packages: done.packages };
      return await this.create(req, resolved, base, key, dir);
    } finally {
      await fsp.rm(lock, { force: true });
    }
  }

  private async create(
    req: EnvironmentRequest,
    resolved: ResolvedRequirements,
    base: EnvironmentBase,
    key: string,
    dir: string,
  ): Promise<BuiltEnvironment> {
    const started = Date.now();
    const normalized = resolved.requirements.map((r) => r.text);
    // pip's output and the files it is handed stay private: `<root>/logs` is 0700, each file 0600.
    const logs = await privateFolder(path.join(this.o.root, "logs"));
    await removeOldBuildFiles(this.o.root);
    const logFile = path.join(logs, `${key}.log`);
    const constraints = path.join(logs, `${key}.constraints.txt`);
    // pip reads this file, written from what was checked, never the user's (requirements.ts says why).
    const pipFile = path.join(logs, `${key}.requirements.txt`);
    await writePrivate(constraints, [...base.pins, ...resolved.constraints.map(requirementSpec)].join("\n") + "\n");
    await writePrivate(pipFile, pipRequirementsText(resolved));
    await writePrivate(logFile, `# ${req.userFile} (${req.model}), ${new Date().toISOString()}\n`);
    const cwd = path.dirname(req.file);
    const requirements = resolved.requirements.map((r) => ({
      ...r,
      file: r.file ? path.join(path.dirname(req.userFile), path.relative(cwd, r.file)) : req.userFile,
    }));
    const fail = (lines: string[], cause?: unknown): never => {
      throw this.failure(req, requirements, base, lines, logFile, cause);
    };

    req.onBuild?.(`building the environment for ${describe(normalized)}`);
    const beat = this.clock.setInterval(
      () =>
        this.progress(
          req.model,
          key,
          `still building its environment (${describe(normalized)}): ${Math.round((Date.now() - started) / 1000)} s so far`,
        ),
      this.o.progressEveryMs ?? 5_000,
      { unref: true },
    );
    try {
      return await this.resolveAndInstall(req, resolved, base, key, dir, {
        started,
        logFile,
        constraints,
        pipFile,
        cwd,
        fail,
      });
    } finally {
      this.clock.clearInterval(beat);
    }
  }

  /** pip's dry run against the stub's pins, then the venv and the install (under create's progress timer). */
  private async resolveAndInstall(
    req: EnvironmentRequest,
    resolved: ResolvedRequirements,
    base: EnvironmentBase,
    key: string,
    dir: string,
    f: {
      started: number;
      logFile: string;
      constraints: string;
      pipFile: string;
      cwd: string;
      fail: (lines: string[], cause?: unknown) => never;
    },
  ): Promise<BuiltEnvironment> {
    const { started, logFile, constraints, pipFile, cwd, fail } = f;
    const normalized = resolved.requirements.map((r) => r.text);
    this.progress(req.model, key, `resolving ${describe(normalized)} against the stub's ${base.pins.join(", ")}`);
    const report = path.join(path.dirname(logFile), `${key}.report.json`);
    const dry = await this.pip(
      this.o.base.python,
      ["--dry-run", "--report", report, "-r", pipFile, "-c", constraints],
      cwd,
      logFile,
    );
    if (dry.exitCode !== 0) fail(dry.lines);
    // Resolved against the managed environment, which the new one sees too: the report lists
    // only what is not there already.
    const fresh = await readReport(report);
    await fsp.rm(report, { force: true });

    this.progress(req.model, key, `installing ${fresh.length ? fresh.join(", ") : "nothing new"} into ${dir}`);
    await fsp.rm(dir, { recursive: true, force: true });
    try {
      const execa = await loadExeca();
      const venv = await execa(this.o.base.python, ["-m", "venv", "--without-pip", dir], { reject: false, all: true });
      if (venv.exitCode !== 0) fail(String(venv.all).split("\n"));
      const python = path.join(dir, "bin", "python");
      const site = (
        await execa(python, ["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], { env: this.env })
      ).stdout.trim();
      // addsitedir (not a bare path line) also runs the managed environment's own .pth files
      // (setup --with-site-packages); being last, the environment's own packages win.
      await fsp.writeFile(
        path.join(site, BASE_PTH),
        `import site; site.addsitedir(${JSON.stringify(this.o.base.sitePackages)})\n`,
      );
      await fsp.copyFile(pipFile, path.join(dir, REQUIREMENTS_FILE));
      await fsp.copyFile(constraints, path.join(dir, "constraints.txt"));
      // pip itself comes from the managed environment through that .pth; it installs into this prefix.
      const install = await this.pip(python, ["-r", pipFile, "-c", constraints], cwd, logFile, (line) =>
        this.progress(req.model, key, "pip", line),
      );
      if (install.exitCode !== 0) fail(install.lines);
      const ms = Date.now() - started;
      await writeFileAtomic(
        path.join(dir, MARKER),
        JSON.stringify(
          { key, requirements: resolved.identity, base, packages: fresh, builtAt: new Date().toISOString(), ms },
          null,
          2,
        ) + "\n",
        0o644,
      );
      this.progress(req.model, key, `environment ${key} ready in ${(ms / 1000).toFixed(1)} s`);
      log.info("environment built", { key, dir, ms });
      return { dir, key, cached: false, ms, packages: fresh };
    } catch (err) {
      // A half-built environment is never left to be taken for a complete one.
      await fsp.rm(dir, { recursive: true, force: true }).catch(() => {});
      throw err;
    }
  }

  private async pip(
    python: string,
    args: string[],
    cwd: string,
    logFile: string,
    onLine?: (line: string) => void,
  ): Promise<{ exitCode: number; lines: string[] }> {
    const argv = ["-m", "pip", "install", "--progress-bar", "off", ...args];
    await fsp.appendFile(logFile, `$ ${python} ${argv.join(" ")}\n`);
    const execa = await loadExeca();
    const child = execa(python, argv, {
      cwd,
      env: this.env,
      extendEnv: false,
      reject: false,
      all: true,
      timeout: this.o.pipTimeoutMs ?? 30 * 60_000,
    });
    const lines: string[] = [];
    let partial = "";
    child.all?.on("data", (chunk: Buffer) => {
      const parts = (partial + chunk.toString()).split("\n");
      partial = parts.pop()!;
      for (const l of parts) {
        lines.push(l);
        if (l.trim()) onLine?.(l.trimEnd());
      }
    });
    const r = await child;
    if (partial) lines.push(partial);
    await fsp.appendFile(logFile, lines.join("\n") + "\n");
    if (r.timedOut) {
      lines.push(`ERROR: pip did not finish within ${Math.round((this.o.pipTimeoutMs ?? 30 * 60_000) / 60_000)} min`);
      return { exitCode: 124, lines };
    }
    return { exitCode: r.exitCode ?? 1, lines };
  }

  private failure(
    req: EnvironmentRequest,
    requirements: Array<RequirementLine & { file: string }>,
    base: EnvironmentBase,
    lines: string[],
    logFile: string,
    cause?: unknown,
  ): EnvironmentError {
    const f: PipFailure = classifyPipFailure(lines, {
      requirements,
      pins: base.pins,
      pythonVersion: base.pythonVersion,
    });
    const refused = f.kind !== "other";
    const message = refused
      ? `${req.model}: ${path.basename(req.userFile)} conflicts with the python backend stub: ${f.message}`
      : `${req.model}: pip could not install ${path.basename(req.userFile)}: ${errorExcerpt(lines, 4)
          .map((l) => l.replace(/^ERROR:\s*/, ""))
          .join(" | ")}`;
    const hint = `${f.hint} pip's full output is in ${logFile}.`;
    const diagnostic: EnvFinding = {
      severity: "error",
      file: f.culprit?.file ?? req.userFile,
      line: f.culprit?.line ?? 1,
      column: f.culprit?.column ?? 1,
      message: refused
        ? f.message
        : `pip could not install it: ${f.excerpt.map((l) => l.replace(/^ERROR:\s*/, "")).join(" | ")}`,
      hint,
      model: req.model,
      code: refused ? "requirements-conflict" : "requirements-install-failed",
    };
    return new EnvironmentError(req.model, message, { hint, refused, diagnostics: [diagnostic], cause });
  }
}

function describe(items: string[]): string {
  if (items.length === 0) return "nothing";
  const shown = items.slice(0, 3).join(", ");
  return items.length > 3 ? `${shown} and ${items.length - 3} more` : shown;
}

function pipEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...env, PIP_NO_INPUT: "1", PIP_DISABLE_PIP_VERSION_CHECK: "1" };
  for (const k of REDIRECTING_PIP_VARS) delete out[k];
  // The stub's Python, not an activated environment of the user's, decides where pip installs.
  delete out.VIRTUAL_ENV;
  delete out.PYTHONHOME;
  return out;
}

/**
 * A folder of ours only we can read: created 0700, and refused when it is a link or another
 * user's (it sits under the environments folder, which TRITON_DEV_ENVS_DIR may move).
 */
async function privateFolder(dir: string): Promise<string> {
  await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
  const st = await fsp.lstat(dir);
  const uid = process.getuid?.();
  if (!st.isDirectory() || (uid !== undefined && st.uid !== uid)) {
    throw new UserError(`${dir} is not a folder of yours: environment build logs are not written there`, {
      hint: `Remove ${dir} (or set TRITON_DEV_ENVS_DIR to a folder of your own), then run the command again.`,
    });
  }
  if ((st.mode & 0o777) !== 0o700) await fsp.chmod(dir, 0o700);
  return dir;
}

/**
 * The build files earlier versions left beside the environments, readable by anyone: a log may
 * hold what pip echoed of a file outside the model (`-r /etc/shadow` printed its first line).
 * Their environments are not reused (LAYOUT_VERSION), so nothing refers to them.
 */
async function removeOldBuildFiles(root: string): Promise<void> {
  for (const f of await fsp.readdir(root).catch(() => [] as string[])) {
    if (/^[0-9a-f]{20}\.(log|constraints\.txt|report\.json)$/.test(f))
      await fsp.rm(path.join(root, f), { force: true });
  }
}

/** Writes a file only we can read, whatever mode an earlier version of it had; never through a link. */
async function writePrivate(file: string, text: string): Promise<void> {
  const h = await fsp.open(
    file,
    fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC | fs.constants.O_NOFOLLOW,
    0o600,
  );
  try {
    await h.chmod(0o600);
    await h.writeFile(text);
  } finally {
    await h.close();
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function readMarker(dir: string): Promise<{ packages: string[] } | undefined> {
  try {
    const m = JSON.parse(await fsp.readFile(path.join(dir, MARKER), "utf8")) as { packages?: unknown };
    if (!fs.existsSync(path.join(dir, "bin", "activate"))) return undefined;
    return { packages: Array.isArray(m.packages) ? m.packages.map(String) : [] };
  } catch {
    return undefined;
  }
}

/** pip's --report: what it would install, `name==version`. */
async function readReport(file: string): Promise<string[]> {
  try {
    const r = JSON.parse(await fsp.readFile(file, "utf8")) as {
      install?: Array<{ metadata?: { name?: string; version?: string } }>;
    };
    return (r.install ?? [])
      .map((i) => (i.metadata?.name ? `${i.metadata.name}==${i.metadata.version ?? "?"}` : undefined))
      .filter((x): x is string => !!x);
  } catch {
    return [];
  }
}

const BASE_SCRIPT = [
  "import json, sys, sysconfig, importlib.metadata as m",
  "pins = {}",
  "for n in sys.argv[1:]:",
  "    try: pins[n] = m.version(n)",
  "    except m.PackageNotFoundError: pass",
  "print(json.dumps({'version': '%d.%d.%d' % sys.version_info[:3], 'soabi': sysconfig.get_config_var('SOABI') or '', 'pins': pins}))",
].join("\n");

async function probeBase(base: BaseInterpreter, stubPackages: string[]): Promise<EnvironmentBase> {
  const execa = await loadExeca();
  const r = await execa(base.python, ["-c", BASE_SCRIPT, ...stubPackages], { reject: false, all: true });
  if (r.exitCode !== 0) {
    throw new UserError(
      `the managed Python ${base.python} does not run: ${String(r.all).split("\n").slice(-2).join(" ")}`,
      {
        hint: "Run `triton-dev doctor` to see what is wrong with it, then `triton-dev setup --repair`.",
      },
    );
  }
  const p = JSON.parse(r.stdout) as { version: string; soabi: string; pins: Record<string, string> };
  return {
    pythonVersion: p.version,
    soabi: p.soabi,
    sitePackages: base.sitePackages,
    pins: Object.entries(p.pins).map(([n, v]) => `${n}==${v}`),
  };
}
