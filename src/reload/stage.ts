import fsp from "node:fs/promises";
import path from "node:path";
import { EnvironmentError } from "../envs/builder.js";
import { withExecutionEnv } from "../envs/execution-env.js";
import type { ModelEnvironments } from "../envs/model-environments.js";
import { UserError, explainFsError } from "../errors.js";
import { log as rootLog } from "../log/logger.js";
import type { Diagnostic } from "../repo/diagnostics.js";
import { listModelDirs } from "../repo/layout.js";
import {
  MODEL_FILE_LIMITS,
  ModelFileError,
  ORIGINALS_DIR,
  type ModelFileProblem,
  listModelFiles,
  openModelFile,
  type ModelFileLimits,
} from "../repo/model-files.js";
import { modelNameProblem, servableName, shownName } from "../repo/model-name.js";

export { ORIGINALS_DIR };

import { stagingLayout, toUserPaths } from "../state/staged-paths.js";
import {
  AdapterError,
  type AdaptedModel,
  type BackendAdapterOptions,
  adaptStaged,
  servedAsOf,
} from "./adapters/backend-adapter.js";

const log = rootLog.child("stage");

/**
 * A model that cannot be copied into a snapshot: what the model-file rule refuses
 * (repo/model-files.ts: a link to nothing, back into a folder holding the model or to a folder
 * outside its repository, a FIFO or device, a model over the limits), a name too long, a full
 * disk. It is that model's
 * problem (reported in the user's path), never the whole `up`'s.
 */
export class StagingError extends UserError {
  override name = "StagingError";
  /** The file or folder it is about, in the user's folder, when known. */
  readonly file: string | undefined;
  readonly problem: StagingProblem;
  /** Where in the user's files the problem is (a requirements.txt line), when known. */
  readonly diagnostics: Diagnostic[] | undefined;
  /** The model asks for what cannot be (a requirement conflicting with the stub): refused, nothing tried. */
  readonly refused: boolean;
  constructor(
    readonly model: string,
    message: string,
    options: {
      hint: string;
      cause?: unknown;
      file?: string;
      problem: StagingProblem;
      diagnostics?: Diagnostic[];
      refused?: boolean;
    },
  ) {
    super(message, options);
    this.file = options.file;
    this.problem = options.problem;
    this.diagnostics = options.diagnostics;
    this.refused = options.refused ?? false;
  }
}

/** What is wrong: the model-file rule's refusal, what the filesystem said while copying, the name, the environment. */
export type StagingProblem =
  | ModelFileProblem
  | "no-space"
  | "name-too-long"
  | "read-only"
  | "vanished"
  | "io-error"
  | "copy-failed"
  | "name-unsafe"
  | "environment"
  | "backend-adapter";

const ERRNO_PROBLEMS: Record<string, StagingProblem> = {
  ENOSPC: "no-space",
  EDQUOT: "no-space",
  ENAMETOOLONG: "name-too-long",
  EROFS: "read-only",
  EACCES: "unreadable",
  EPERM: "unreadable",
  ELOOP: "link-loop",
  ENOENT: "vanished",
  ENOTDIR: "vanished",
  EIO: "io-error",
};

/**
 * The model's diagnostic for a StagingError (`staging-<problem>`), for the timeline, `status` and
 * the dashboard alike; it points at the file when known, else at the model folder.
 */
export function stagingDiagnostic(e: StagingError, modelsDir: string): Diagnostic {
  return {
    severity: "error",
    code: `staging-${e.problem}`,
    file: e.file ?? path.join(modelsDir, e.model),
    line: 1,
    column: 1,
    message: e.message,
    model: e.model,
    ...(e.hint ? { hint: e.hint } : {}),
  };
}

/** All of a StagingError's diagnostics: its own (a requirements.txt line) or the one above. */
export function stagingDiagnostics(e: StagingError, modelsDir: string): Diagnostic[] {
  return e.diagnostics?.length ? e.diagnostics : [stagingDiagnostic(e, modelsDir)];
}

const STATE_FOLDER = "the state folder";

/**
 * What the user reads for an error met while copying `p` of `model` into a snapshot. Anything but
 * a filesystem error or the model-file rule's refusal is ours, and passed on as it is.
 */
export function stagingError(model: string, p: string, err: unknown): unknown {
  if (err instanceof StagingError) return err;
  if (err instanceof ModelFileError) {
    return new StagingError(model, `${model}: ${err.message}`, {
      hint: err.hint ?? "",
      cause: err,
      file: err.file,
      problem: err.problem,
    });
  }
  if (!(err instanceof Error) || typeof (err as NodeJS.ErrnoException).code !== "string") return err;
  const { code, is, hint } = explainFsError(err, { into: STATE_FOLDER });
  return new StagingError(model, `${model}: ${p} ${is}`, {
    hint: `${hint} Then save the model again.`,
    cause: err,
    file: p,
    problem: ERRNO_PROBLEMS[code ?? ""] ?? "copy-failed",
  });
}

/**
 * Copy the model folder `src` into `dst` by the model-file rule (repo/model-files.ts): links are
 * copied as what they lead to, so a snapshot holds only files and folders and editing a link's
 * target changes nothing served until the watcher sees it. The whole tree is checked before the
 * first byte is written.
 */
async function copyModel(model: string, src: string, dst: string, limits: ModelFileLimits): Promise<void> {
  const entries = await listModelFiles(src, model, { limits });
  await fsp.mkdir(dst, { recursive: true }).catch((err: unknown) => Promise.reject(stagingError(model, src, err)));
  for (const e of entries) {
    const d = path.join(dst, e.rel);
    try {
      if (e.kind === "dir") await fsp.mkdir(d);
      else await copyRegularFile(e.path, d);
    } catch (err) {
      throw stagingError(model, e.path, err);
    }
  }
}

/** copyFile, after checking that `src` still is a regular file (a FIFO put there since would block the copy). */
async function copyRegularFile(src: string, dst: string): Promise<void> {
  const handle = await openModelFile(src);
  await handle.close();
  await fsp.copyFile(src, dst);
}

export interface PublishOptions {
  /**
   * Run the repository's prepare step (default true). Explicit mode skips it: its only purpose is
   * to keep the python stub from writing __pycache__ into a served folder, which matters only
   * when Triton polls the folder's mtime.
   */
  prepare?: boolean;
  /** Told when the model's environment is being built (not found cached): what it installs. */
  onEnvironment?: (what: string) => void;
}

export interface StagingOptions {
  /** Run after a model is copied and before it becomes visible (e.g. precompiling model.py). */
  prepare?: (modelDir: string) => Promise<void>;
  /** Environments for python models with a requirements.txt (absent: the runtime builds none). */
  environments?: ModelEnvironments;
  /** How much of a model is copied (repo/model-files.ts). */
  limits?: ModelFileLimits;
  /**
   * Backends the runtime serves through the python backend (adapters/backend-adapter.ts): their
   * models' snapshots get the adapter and the runtime library's environment.
   */
  adapters?: BackendAdapterOptions;
}

/**
 * How each model a run serves through an adapter is served, read from its staging repository
 * (from any process): `status` and the dashboard say it beside the model.
 */
export async function servedAs(runDir: string): Promise<Map<string, string>> {
  const { repository } = stagingLayout(runDir);
  const out = new Map<string, string>();
  for (const name of await servedModels(runDir)) {
    const s = await servedAsOf(path.join(repository, name));
    if (s) out.set(name, s);
  }
  return out;
}

/**
 * The models a run serves, read from its staging repository (from any process): each link to a
 * snapshot generation. A model withdrawn after a failed load, or whose folder was deleted, has none.
 */
export async function servedModels(runDir: string): Promise<string[]> {
  const { repository } = stagingLayout(runDir);
  const names: string[] = [];
  for (const e of await fsp.readdir(repository).catch(() => [] as string[])) {
    const target = await fsp.readlink(path.join(repository, e)).catch(() => undefined);
    if (target && /@\d+$/.test(target)) names.push(e);
  }
  return names.sort();
}

/**
 * The repository Triton serves. Each entry of `repository/` is a symlink to an immutable
 * snapshot in `store/<name>@<generation>`; publishing a model writes a new snapshot and swaps
 * the link with one rename. Triton therefore never sees a partial model or a moment without the
 * model, however it polls, and the last good snapshot stays at hand to restore. The user's
 * files are only read.
 */
export class StagingRepository {
  readonly repository: string;
  private readonly store: string;
  private readonly scratch: string;
  private readonly generations = new Map<string, number>();
  /** The highest generation ever written per model, so numbers are never reused. */
  private readonly highest = new Map<string, number>();
  private readonly prepare: StagingOptions["prepare"];
  private linkSeq = 0;
  private readonly environments: StagingOptions["environments"];
  private readonly limits: ModelFileLimits;
  private readonly adapters: StagingOptions["adapters"];
  /** The models served through an adapter, by the last snapshot written for them. */
  private readonly adaptedModels = new Map<string, AdaptedModel>();

  constructor(runDir: string, options: StagingOptions = {}) {
    ({ repository: this.repository, store: this.store } = stagingLayout(runDir));
    this.scratch = path.join(runDir, ".publish");
    this.prepare = options.prepare;
    this.environments = options.environments;
    this.limits = options.limits ?? MODEL_FILE_LIMITS;
    this.adapters = options.adapters;
  }

  /** The backends this run serves through an adapter (none where the runtime adapts none). */
  adaptedBackends(): string[] {
    return Object.keys(this.adapters?.backends ?? {});
  }

  /** How `name` is served when an adapter serves it ("served through ONNX Runtime 1.20 in the python backend ..."). */
  adapted(name: string): AdaptedModel | undefined {
    return this.adaptedModels.get(name);
  }

  /**
   * Stage every model of `sourceRepo` for which `include` holds; returns the staged names. A model
   * that cannot be copied is left out and passed to `onError`, never failing the others.
   */
  async init(
    sourceRepo: string,
    include: (name: string) => boolean = () => true,
    onError: (e: StagingError) => void = (e) => {
      throw e;
    },
  ): Promise<string[]> {
    await fsp.rm(this.repository, { recursive: true, force: true });
    await Promise.all([this.repository, this.store, this.scratch].map((d) => fsp.mkdir(d, { recursive: true })));
    const staged: string[] = [];
    for (const m of await listModelDirs(sourceRepo)) {
      if (!include(m)) continue;
      try {
        await this.publish(sourceRepo, m);
      } catch (err) {
        if (!(err instanceof StagingError)) throw err;
        onError(err);
        continue;
      }
      staged.push(m);
    }
    return staged;
  }

  /** Pick up what an earlier process staged here (the detached run's supervisor does this). */
  async load(): Promise<void> {
    this.generations.clear();
    this.highest.clear();
    for (const e of await fsp.readdir(this.repository).catch(() => [] as string[])) {
      const target = await fsp.readlink(path.join(this.repository, e)).catch(() => undefined);
      const m = target && /@(\d+)$/.exec(target);
      if (m) this.generations.set(e, Number(m[1]));
    }
    for (const e of await fsp.readdir(this.store).catch(() => [] as string[])) {
      const m = /^(.+)@(\d+)$/.exec(e);
      if (m) this.highest.set(m[1]!, Math.max(this.highest.get(m[1]!) ?? 0, Number(m[2])));
    }
  }

  /** The generation currently served for `name`, if staged. */
  current(name: string): number | undefined {
    return this.generations.get(name);
  }

  snapshotDir(name: string, generation: number): string {
    return path.join(this.store, `${name}@${generation}`);
  }

  has(name: string): boolean {
    return this.generations.has(name);
  }

  names(): string[] {
    return [...this.generations.keys()].sort();
  }

  /**
   * Copy the model into a new snapshot and make it the served one. Returns its generation.
   * `prepare: false` skips the prepare step (see PublishOptions).
   */
  async publish(sourceRepo: string, name: string, options: PublishOptions = {}): Promise<number> {
    // Lint refuses these already; checked here too, since a model staged is a model Triton loads,
    // and for such a name the python backend would run part of it as a shell command.
    const unsafe = modelNameProblem(name);
    if (unsafe) {
      throw new StagingError(name, `model folder '${shownName(name)}' cannot be served: its name ${unsafe}`, {
        hint: `Rename the folder to '${servableName(name)}' (letters, digits, '_', '-' and '.' only).`,
        problem: "name-unsafe",
      });
    }
    const generation = this.nextGeneration(name);
    const dir = this.snapshotDir(name, generation);
    await this.writeSnapshot(name, path.join(sourceRepo, name), dir, options);
    this.generations.set(name, generation);
    return generation;
  }

  /**
   * Copy `src` into the snapshot `dir`, give it its environment, prepare it and make it the
   * served one; on any failure nothing of `dir` is left behind (on a full disk it would only fill
   * it further) and what served before still does. `fromSnapshot`: `src` is one of ours (a
   * restore), whose rewritten files and their originals are copied as they are.
   */
  private async writeSnapshot(
    name: string,
    src: string,
    dir: string,
    options: PublishOptions,
    fromSnapshot = false,
  ): Promise<void> {
    try {
      await fsp.rm(dir, { recursive: true, force: true });
      await copyModel(name, src, dir, this.limits);
      if (fromSnapshot) {
        const originals = path.join(src, ORIGINALS_DIR);
        if (await fsp.stat(originals).catch(() => undefined))
          await fsp.cp(originals, path.join(dir, ORIGINALS_DIR), { recursive: true });
      } else {
        const adapted = this.adapters
          ? await adaptStaged(name, dir, src, this.adapters, options.onEnvironment)
          : undefined;
        if (adapted) this.adaptedModels.set(name, adapted);
        else {
          this.adaptedModels.delete(name);
          await this.stageEnvironment(name, dir, src, options.onEnvironment);
        }
      }
      if (options.prepare !== false) await this.prepare?.(dir);
      await this.point(name, dir);
    } catch (err) {
      await fsp.rm(dir, { recursive: true, force: true }).catch(() => {});
      if (err instanceof EnvironmentError) {
        throw new StagingError(name, err.message, {
          hint: err.hint ?? "",
          cause: err,
          problem: "environment",
          ...(err.diagnostics ? { diagnostics: err.diagnostics } : {}),
          refused: err.refused,
        });
      }
      const staging = stagingError(name, src, err);
      if (staging instanceof StagingError || !(err instanceof UserError)) throw staging;
      throw new StagingError(name, err.message.startsWith(`${name}: `) ? err.message : `${name}: ${err.message}`, {
        hint: err.hint ?? "",
        cause: err,
        problem: err instanceof AdapterError ? "backend-adapter" : "copy-failed",
      });
    }
  }

  /**
   * The model's requirements.txt, as an environment it runs in: built (or found cached) while the
   * last good snapshot keeps serving, then named in this snapshot's config.pbtxt. The user's own
   * file is never touched.
   */
  private async stageEnvironment(
    name: string,
    dir: string,
    userDir: string,
    onEnvironment?: (what: string) => void,
  ): Promise<void> {
    const built = await this.environments?.prepare(name, dir, userDir, onEnvironment);
    if (!built) return;
    const configFile = path.join(dir, "config.pbtxt");
    const original = await fsp.readFile(configFile, "utf8").catch(() => undefined);
    const originals = path.join(dir, ORIGINALS_DIR);
    await fsp.mkdir(originals, { recursive: true });
    if (original === undefined) await fsp.writeFile(path.join(originals, "config.pbtxt.added"), "");
    else await fsp.writeFile(path.join(originals, "config.pbtxt"), original);
    // A python model without config.pbtxt is completed by Triton from model.py; the parameter
    // needs a config to live in, which auto-complete then fills in.
    await fsp.writeFile(configFile, withExecutionEnv(original ?? 'backend: "python"\n', built.dir));
  }

  /** Serve an earlier snapshot again (the last good one after a failed load). */
  async restore(name: string, generation: number, options: PublishOptions = {}): Promise<void> {
    const dir = this.snapshotDir(name, generation);
    // A fresh copy gives Triton a strictly newer mtime, which poll mode needs to notice the change.
    const next = this.nextGeneration(name);
    try {
      await this.writeSnapshot(name, dir, this.snapshotDir(name, next), options, true);
      this.generations.set(name, next);
    } catch (err) {
      // No room for a copy (a full disk): serve the good snapshot itself, which needs none.
      log.warn("could not copy the last good snapshot; serving it as it is", { model: name, error: String(err) });
      try {
        await this.point(name, dir);
      } catch (again) {
        throw stagingError(name, dir, again);
      }
      this.generations.set(name, generation);
    }
  }

  /**
   * Stop serving `name`: its folder was deleted, or its load failed with no earlier version to
   * fall back on (poll mode would otherwise retry it at every poll).
   */
  async remove(name: string): Promise<void> {
    await fsp.rm(path.join(this.repository, name), { force: true });
    this.generations.delete(name);
  }

  /**
   * Generations only grow, also across a removal: a model published again after being withdrawn
   * gets a snapshot folder of its own instead of reusing one a loading stub may still read.
   */
  private nextGeneration(name: string): number {
    const next = Math.max(this.generations.get(name) ?? 0, this.highest.get(name) ?? 0) + 1;
    this.highest.set(name, next);
    return next;
  }

  /**
   * Triton names files by where it loaded them (this repository, or a snapshot in the store);
   * point the user at their own files instead.
   */
  userPaths(text: string, sourceRepo: string): string {
    return toUserPaths(text, { repository: this.repository, store: this.store }, sourceRepo);
  }

  /** Delete snapshots of `name` other than the served one and those in `keep`. */
  async prune(name: string, keep: number[] = []): Promise<void> {
    const served = this.generations.get(name);
    const prefix = `${name}@`;
    for (const e of await fsp.readdir(this.store)) {
      if (!e.startsWith(prefix)) continue;
      const g = Number(e.slice(prefix.length));
      if (g === served || keep.includes(g)) continue;
      await fsp.rm(path.join(this.store, e), { recursive: true, force: true });
    }
  }

  /**
   * Serve a placeholder under `name` (its files, relative to the model folder) until remove():
   * poll mode's way of having Triton forget a failed load (reload/forget.ts). Its snapshot is no
   * generation, so load() and servedModels() do not take it for the model's own.
   */
  async publishPlaceholder(name: string, files: Record<string, string>): Promise<void> {
    const dir = path.join(this.store, `${name}@placeholder`);
    await fsp.rm(dir, { recursive: true, force: true });
    for (const [rel, text] of Object.entries(files)) {
      await fsp.mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
      await fsp.writeFile(path.join(dir, rel), text);
    }
    await this.point(name, dir);
    this.generations.delete(name);
  }

  private async point(name: string, target: string): Promise<void> {
    await fsp.mkdir(this.scratch, { recursive: true });
    // Not named after the model: a long model name would make this name too long for the filesystem.
    const tmp = path.join(this.scratch, `link-${process.pid}-${++this.linkSeq}-${Date.now()}`);
    await fsp.symlink(path.relative(this.repository, target), tmp);
    // rename(2) over an existing symlink is atomic; the scratch folder is outside the
    // repository, so Triton never sees the temporary link.
    await fsp.rename(tmp, path.join(this.repository, name));
  }
}
