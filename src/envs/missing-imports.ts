import fs from "node:fs";
import path from "node:path";
import { spawn, type ChildProcess } from "node:child_process";
import { REAL_CLOCK, type Clock } from "../clock.js";
import type { EnvFinding } from "./finding.js";
import { packageFor } from "../module-packages.js";
import { canonicalName, REQUIREMENTS_FILE } from "./requirements.js";

/**
 * Every module a python model imports at load that its environment lacks, found in one pass
 * instead of one ModuleNotFoundError per load (the stub stops at the first). The model's files are
 * read by Python's `ast` only: nothing of the repository is imported or run, so this needs no
 * sandbox (repo/model-code-sandbox.ts is for code that runs). Whether a module is there is asked of
 * the interpreter the stub will run (`importlib.util.find_spec` of the top-level name, which
 * searches the path without importing it), started in its own bin folder with only the variables
 * that change the stub's path (PYTHONPATH, the user site), so the repository's folders are not on it.
 *
 * Only imports the stub certainly runs count: statements directly in a module's body (not under
 * `try`, `if` or a function), in the model file and in the local modules it imports that way. A
 * file that changes `sys.path` or imports through `importlib` is left out: what it imports depends
 * on code.
 */

/** Provided by the python backend's stub, not by any package. */
const STUB_MODULES = ["triton_python_backend_utils"];
/** Beyond these the model is judged by the files it holds (a repository of thousands is not read whole). */
const MAX_FILES = 200;
const MAX_FILE_BYTES = 1024 * 1024;

const SCRIPT = String.raw`
import ast, json, os, sys, importlib.util

def check(req):
    search = req["search"]
    root = os.path.realpath(search[-1])
    MAX_FILES, MAX_BYTES = req["maxFiles"], req["maxBytes"]

    def local_path(name, base_dirs):
        parts = name.split(".")
        for d in base_dirs:
            p = os.path.join(d, *parts)
            if os.path.isfile(p + ".py"):
                return p + ".py"
            if os.path.isfile(os.path.join(p, "__init__.py")):
                return os.path.join(p, "__init__.py")
            if os.path.isdir(p):
                return p
        return None

    listed = {}

    def is_local(top):
        for d in search:
            p = os.path.join(d, top)
            if not os.path.isdir(d):
                continue
            if d not in listed:
                listed[d] = [f for f in os.listdir(d) if f.endswith(".so")]
            if os.path.isfile(p + ".py") or os.path.isdir(p) or any(f.startswith(top + ".") for f in listed[d]):
                return True
        return False

    DYNAMIC = ("sys.path", "importlib", "__import__", "site.addsitedir", "os.chdir")
    seen, found, skipped = set(), [], []
    queue = [req["entry"]]
    while queue and len(seen) < MAX_FILES:
        f = queue.pop(0)
        if f in seen or not os.path.isfile(f):
            continue
        seen.add(f)
        # Only the model's own files: a link leading out of its folder is not read.
        if not os.path.realpath(f).startswith(root + os.sep):
            skipped.append([f, "outside the model"])
            continue
        try:
            if os.path.getsize(f) > MAX_BYTES:
                skipped.append([f, "too large"])
                continue
            with open(f, "rb") as h:
                src = h.read()
            tree = ast.parse(src, filename=f)
        except (SyntaxError, ValueError, RecursionError, MemoryError, OSError) as e:
            skipped.append([f, type(e).__name__])
            continue
        text = src.decode("utf-8", "replace")
        if any(d in text for d in DYNAMIC):
            skipped.append([f, "dynamic"])
            continue
        here = os.path.dirname(f)
        for node in tree.body:
            names = []
            if isinstance(node, ast.Import):
                names = [(a.name, None) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here
                    for _ in range(node.level - 1):
                        base = os.path.dirname(base)
                    mod = node.module.split(".") if node.module else []
                    for a in node.names:
                        p = local_path(".".join(mod + [a.name]), [base]) or (local_path(".".join(mod), [base]) if mod else None)
                        if p and p.endswith(".py"):
                            queue.append(p)
                    continue
                names = [(node.module, [a.name for a in node.names])]
            for name, members in names:
                top = name.split(".")[0]
                if top in ("__future__",) or top in req["stub"]:
                    continue
                if is_local(top):
                    p = local_path(name, search)
                    if p and p.endswith(".py"):
                        queue.append(p)
                    for m in members or []:
                        q = local_path(name + "." + m, search)
                        if q and q.endswith(".py"):
                            queue.append(q)
                    continue
                found.append({"file": f, "line": node.lineno, "column": node.col_offset + 1, "module": name, "top": top})

    specs = {}
    def spec_of(top):
        if top not in specs:
            try:
                specs[top] = importlib.util.find_spec(top)
            except (ImportError, ValueError):
                specs[top] = None
        return specs[top]

    missing = []
    for imp in found:
        top, name = imp["top"], imp["module"]
        spec = spec_of(top)
        if spec is None:
            imp["key"] = top
            missing.append(imp)
        elif spec.origin is None and spec.submodule_search_locations is not None and "." in name:
            # A namespace package (google): the part below it decides (google.protobuf), looked up in its folders.
            sub = name.split(".")[1]
            if not any(
                os.path.exists(os.path.join(d, sub)) or os.path.exists(os.path.join(d, sub + ".py"))
                for d in spec.submodule_search_locations
            ):
                imp["key"] = top + "." + sub
                missing.append(imp)
    return {"missing": missing, "files": sorted(seen), "skipped": skipped}


# One request per line, one answer per line: a worker kept while requests come (lint reads thousands).
# The environments asked about do not change while a worker lives (a built one never does; the
# worker ends when idle), so the importer's folder caches are kept between requests.
for line in sys.stdin:
    try:
        answer = check(json.loads(line))
    except Exception as e:
        answer = {"error": "%s: %s" % (type(e).__name__, e)}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
`;

export interface MissingImport {
  /** The file (absolute) and place of the import statement. */
  file: string;
  line: number;
  column: number;
  /** The module as written (`google.protobuf.json_format`). */
  module: string;
  /** What is missing: the top-level name, or `google.protobuf` below a namespace package. */
  missing: string;
  /** The pip package that provides it, and whether its name differs from the module's. */
  package: string;
  differs: boolean;
}

export interface ImportCheck {
  missing: MissingImport[];
  /** The files read (the model file and the local modules it imports). */
  files: string[];
  /** Files left out: unparsable, too large, or with imports that depend on code (`sys.path`). */
  skipped: Array<{ file: string; why: string }>;
}

/** A version folder's model file and the folders its imports are looked up in besides the environment. */
export interface ImportCheckRequest {
  /** The model file (`<model>/<version>/model.py`). */
  entry: string;
  /** The interpreter the stub runs: the model's environment's, or the managed one. */
  python: string;
  timeoutMs?: number;
  /** The environment tritonserver (and so the stub) runs with: its PYTHONPATH and user site count. */
  env?: NodeJS.ProcessEnv;
  /** The time `timeoutMs` runs on (../clock.ts). */
  clock?: Clock;
}

/** The package to add for a module missing below a namespace package (`google.protobuf`): a few are known. */
const NAMESPACE_PACKAGES: Readonly<Record<string, string>> = {
  "google.protobuf": "protobuf",
  "google.cloud": "google-cloud-core",
};

function packageOf(missing: string): { package: string; differs: boolean } {
  const ns = NAMESPACE_PACKAGES[missing];
  if (ns) return { package: ns, differs: true };
  return packageFor(missing.split(".")[0]!);
}

/** How long a worker waits for the next request before it ends (a lint run asks thousands in a row). */
const WORKER_IDLE_MS = 2_000;

/**
 * One Python per interpreter, kept while requests come: a lint of 2,000 python models would
 * otherwise start 2,000 interpreters. Requests are answered in order, one JSON line each.
 */
class ImportWorker {
  private readonly child: ChildProcess;
  private readonly waiting: Array<{ resolve: (a: Record<string, unknown>) => void; reject: (e: Error) => void }> = [];
  private buffer = "";
  private idle: NodeJS.Timeout | undefined;
  private dead: Error | undefined;

  constructor(
    readonly python: string,
    env: NodeJS.ProcessEnv,
    private readonly onEnd: () => void,
  ) {
    this.child = spawn(python, ["-B", "-c", SCRIPT], {
      // The interpreter's own folder, never the repository's: nothing there is on its path.
      cwd: path.dirname(python),
      env,
      stdio: ["pipe", "pipe", "ignore"],
    });
    this.child.stdout!.setEncoding("utf8");
    this.child.stdout!.on("data", (chunk: string) => {
      this.buffer += chunk;
      for (let nl = this.buffer.indexOf("\n"); nl >= 0; nl = this.buffer.indexOf("\n")) {
        const line = this.buffer.slice(0, nl);
        this.buffer = this.buffer.slice(nl + 1);
        const next = this.waiting.shift();
        try {
          next?.resolve(JSON.parse(line) as Record<string, unknown>);
        } catch (err) {
          next?.reject(err as Error);
        }
      }
      this.armIdle();
    });
    this.child.on("error", (err) => this.end(err));
    this.child.on("exit", (code, signal) => this.end(new Error(`${python} ended (${signal ?? `code ${code}`})`)));
    this.child.stdin!.on("error", (err) => this.end(err));
  }

  ask(req: Record<string, unknown>, timeoutMs: number, clock: Clock): Promise<Record<string, unknown>> {
    if (this.dead) return Promise.reject(this.dead);
    if (this.idle) clearTimeout(this.idle);
    return new Promise((resolve, reject) => {
      const timer = clock.setTimeout(
        () => {
          this.child.kill("SIGKILL");
          this.end(new Error(`the import check took over ${timeoutMs} ms`));
        },
        timeoutMs,
        { unref: true },
      );
      this.waiting.push({
        resolve: (a) => {
          clock.clearTimeout(timer);
          resolve(a);
        },
        reject: (e) => {
          clock.clearTimeout(timer);
          reject(e);
        },
      });
      this.hold(true);
      this.child.stdin!.write(JSON.stringify(req) + "\n");
    });
  }

  /**
   * Held (keeping the process alive) only while a request waits: an idle worker never delays the
   * exit of `lint`, and ends with it (its stdin closes).
   */
  private hold(on: boolean): void {
    for (const h of [this.child, this.child.stdin, this.child.stdout] as Array<{ ref(): void; unref(): void } | null>)
      if (on) h?.ref();
      else h?.unref();
  }

  private armIdle(): void {
    if (this.idle) clearTimeout(this.idle);
    if (this.waiting.length > 0) return;
    this.hold(false);
    // Real time, not a caller's clock: the worker is shared by every caller that asks with this interpreter.
    this.idle = setTimeout(() => this.child.stdin!.end(), WORKER_IDLE_MS);
    this.idle.unref();
  }

  private end(err: Error): void {
    if (this.dead) return;
    this.dead = err;
    if (this.idle) clearTimeout(this.idle);
    for (const w of this.waiting.splice(0)) w.reject(err);
    this.onEnd();
  }
}

const workers = new Map<string, ImportWorker>();

/**
 * What the stub's Python sees of the environment besides its own folders: PYTHONPATH and the user
 * site (HOME, PYTHONUSERBASE), which tritonserver passes on to it; nothing else reaches the check.
 */
function checkEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { PATH: env.PATH ?? "/usr/bin:/bin", LANG: "C.UTF-8" };
  for (const k of ["HOME", "PYTHONPATH", "PYTHONUSERBASE", "PYTHONNOUSERSITE"]) if (env[k]) out[k] = env[k];
  return out;
}

function workerFor(python: string, env: NodeJS.ProcessEnv): ImportWorker {
  const e = checkEnv(env);
  const id = JSON.stringify([python, e]);
  let w = workers.get(id);
  if (!w) {
    const created: ImportWorker = new ImportWorker(python, e, () => {
      if (workers.get(id) === created) workers.delete(id);
    });
    w = created;
    workers.set(id, w);
    // A worker that ends between requests is started again by the next one.
  }
  return w;
}

/**
 * The model file's missing imports. The stub puts the version folder on the path (and the model's
 * folder holds its config): a module there is the model's own. Throws only when the interpreter
 * cannot run at all; a file it cannot read or parse is in `skipped` (its load says what is wrong).
 */
export async function findMissingImports(req: ImportCheckRequest): Promise<ImportCheck> {
  const versionDir = path.dirname(req.entry);
  const search = [versionDir, path.dirname(versionDir)];
  const answer = await workerFor(req.python, req.env ?? process.env).ask(
    { entry: req.entry, search, stub: STUB_MODULES, maxFiles: MAX_FILES, maxBytes: MAX_FILE_BYTES },
    req.timeoutMs ?? 30_000,
    req.clock ?? REAL_CLOCK,
  );
  if (typeof answer.error === "string") throw new Error(`the import check failed on ${req.entry}: ${answer.error}`);
  const out = answer as unknown as {
    missing: Array<{ file: string; line: number; column: number; module: string; key: string }>;
    files: string[];
    skipped: Array<[string, string]>;
  };
  return {
    missing: out.missing.map((m) => {
      // All of `google` missing: the part the package provides names it (google.protobuf -> protobuf).
      const key =
        Object.keys(NAMESPACE_PACKAGES).find((ns) => m.module === ns || m.module.startsWith(`${ns}.`)) ?? m.key;
      return { file: m.file, line: m.line, column: m.column, module: m.module, missing: key, ...packageOf(key) };
    }),
    files: out.files,
    skipped: out.skipped.map(([file, why]) => ({ file, why })),
  };
}

/**
 * Leaves out modules whose package a requirements file already names (canonical): before the
 * environment is built, what it will hold is known only by those names.
 */
export function withoutListed(missing: MissingImport[], listed: ReadonlySet<string>): MissingImport[] {
  return missing.filter((m) => !listed.has(canonicalName(m.package)) && !listed.has(canonicalName(m.missing)));
}

/** One entry per missing module, first place first: `cv2 (opencv-python-headless)`. */
function distinct(missing: MissingImport[]): MissingImport[] {
  const byName = new Map<string, MissingImport>();
  for (const m of missing) if (!byName.has(m.missing)) byName.set(m.missing, m);
  return [...byName.values()];
}

function named(m: MissingImport): string {
  return m.differs ? `'${m.missing}' (package ${m.package})` : `'${m.missing}'`;
}

/**
 * The one sentence that names them all and where to list them; `files` maps a staged path back
 * to the user's (up reads the staged copy).
 */
export function describeMissingImports(
  model: string,
  modelDir: string,
  missing: MissingImport[],
  o: { asUser?: (file: string) => string; notBuilt?: boolean } = {},
): { message: string; hint: string; diagnostics: EnvFinding[] } {
  const asUser = o.asUser ?? ((f: string) => f);
  const all = distinct(missing);
  const requirements = path.join(modelDir, REQUIREMENTS_FILE);
  const packages = [...new Set(all.map((m) => m.package))];
  const env = o.notBuilt
    ? "that neither the managed environment nor requirements.txt provides"
    : "the model's environment lacks";
  const message = `${model} imports ${all.length === 1 ? "a module" : `${all.length} modules`} ${env}: ${all.map(named).join(", ")}`;
  const hint = `Add ${packages.length === 1 ? "this line" : "these lines"} to ${requirements} (triton-dev builds the model an environment from it): ${packages.join(", ")}.`;
  const diagnostics: EnvFinding[] = missing.map((m, i) => ({
    severity: o.notBuilt ? "warning" : "error",
    file: asUser(m.file),
    line: m.line,
    column: m.column,
    message: o.notBuilt
      ? `'${m.module}' is in neither the managed environment nor a package requirements.txt names: unless a package listed there provides it, the load fails with "No module named '${m.missing}'"`
      : `'${m.module}' is not installed in the model's environment: the load fails with "No module named '${m.missing}'"${i === 0 && all.length > 1 ? ` (all ${all.length} missing: ${all.map((x) => x.missing).join(", ")})` : ""}`,
    hint: `Add ${m.package}${m.differs ? ` (the package that provides '${m.missing}')` : ""} to ${requirements}; triton-dev builds the model an environment from it.`,
    model,
    code: "python-import-missing",
  }));
  return { message, hint, diagnostics };
}

/** The model file a python config names (`default_model_filename`), model.py otherwise. */
export function modelFileName(config: string | undefined): string {
  return /^\s*default_model_filename\s*:\s*["']([^"'\n]+)["']/m.exec(config ?? "")?.[1] ?? "model.py";
}

/** The model file of each version folder that has one (`default_model_filename` or model.py). */
export function modelFiles(modelDir: string, versions: string[], fileName = "model.py"): string[] {
  return versions.map((v) => path.join(modelDir, v, fileName)).filter((f) => fs.existsSync(f));
}
