import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { UserError } from "../errors.js";
import { log as rootLog } from "../log/logger.js";
import { type Diagnostic, compareDiagnostics } from "../repo/diagnostics.js";
import { CONFIG_FILE, isIgnoredEntry, isVersionDirName } from "../repo/layout.js";
import { type LintOptions, RepositoryLint } from "../repo/lint.js";
import { type ParsedConfig, parseModelConfig } from "../repo/parse.js";
import type { ModelLayout } from "../repo/layout.js";
import { ModelFolderWatch } from "./model-watch.js";

const log = rootLog.child("lsp");

/** Where a config.pbtxt sits: its repository and model (a config in a version folder belongs to the model above). */
export interface ConfigLocation {
  repo: string;
  model: string;
  /** The model's config.pbtxt, the one Triton reads. */
  configFile: string;
}

/**
 * Folders that are never a model: a config.pbtxt saved straight in one (a download in the home
 * folder, a scratch file in /tmp) belongs to no repository, and taking the folder for a model would
 * walk all of it. Such a config is checked alone.
 */
export function notModelFolders(env: NodeJS.ProcessEnv = process.env): string[] {
  return [os.homedir(), os.tmpdir(), env.TMPDIR ?? "", "/tmp", "/var/tmp"].filter(Boolean).map((d) => path.resolve(d));
}

export function locateConfig(file: string, never: readonly string[] = notModelFolders()): ConfigLocation | undefined {
  if (path.basename(file) !== CONFIG_FILE) return undefined;
  let modelDir = path.dirname(file);
  if (isVersionDirName(path.basename(modelDir)) && path.dirname(modelDir) !== modelDir)
    modelDir = path.dirname(modelDir);
  const repo = path.dirname(modelDir);
  // A model folder straight under / would make the whole filesystem its repository.
  if (repo === modelDir || repo === path.parse(repo).root || never.includes(modelDir) || never.includes(repo))
    return undefined;
  return { repo, model: path.basename(modelDir), configFile: path.join(modelDir, CONFIG_FILE) };
}

interface Repo {
  lint: RepositoryLint;
  watcher?: ModelFolderWatch;
  /** The repository folder's own entries (models added, removed, links). */
  top?: fs.FSWatcher;
  /** Each model's findings as last published, by the file an editor shows them on. */
  byModel: Map<string, Map<string, Diagnostic[]>>;
  /** The models holding findings on each file. */
  byFile: Map<string, Set<string>>;
  /** Findings no model holds, on the open configs (see publishRepo). */
  extra: Map<string, Diagnostic[]>;
  /** Files whose findings changed since they were last published. */
  dirty: Set<string>;
  ready: Promise<void>;
  /** The repository's folders listed (nothing read yet). */
  listed: Promise<void>;
  /** Whether every model has been read once (until then a change reads only what it needs). */
  indexed: boolean;
}

/**
 * A step of a repository's first reading, between which changes and requests are answered: a
 * keystroke's lint waits for the step in progress, so a step is sized to take about STEP_MS
 * (fewer models on a slow or busy machine), between STEP_MIN (the reads in flight at once) and
 * STEP_MAX models.
 */
const STEP_MS = 30;
const STEP_MIN = 8;
const STEP_MAX = 200;
/** Models whose findings are gathered and published per step once the repository is read. */
const PUBLISH_CHUNK = 500;

export interface WorkspaceOptions {
  lint?: LintOptions;
  /** Watch each repository for saves made elsewhere (off in tests that drive changes themselves). */
  watch?: boolean;
  /** Called with a file and every finding on it now (none: clear it), whenever that changes. */
  publish: (file: string, diagnostics: Diagnostic[]) => void;
}

/** An open config whose model folder is gone: said, rather than its findings silently dropped. */
function modelFolderMissing(at: ConfigLocation, repo: string): Diagnostic {
  return {
    severity: "error",
    file: at.configFile,
    line: 1,
    column: 1,
    model: at.model,
    code: "model-folder-missing",
    message: `model folder '${at.model}' no longer exists in ${repo}: this config belongs to no model, so nothing checks the files around it and Triton does not serve it`,
    hint: `Save the config to create ${path.join(at.model, CONFIG_FILE)} again and put the model file back in a version folder (${path.join(at.model, "1")}/), or close it if the model was removed on purpose.`,
  };
}

/**
 * The repositories the open configs belong to, each linted as `lint` would with the unsaved text
 * of open configs in place of their files; findings are published per file, and a file whose
 * findings are gone is published empty once.
 */
export class Workspace {
  private readonly repos = new Map<string, Repo>();
  /** Unsaved text of open configs, by absolute path. */
  private readonly buffers = new Map<string, string>();
  /** Files that hold findings, as last published, by repository. */
  private readonly published = new Map<string, Set<string>>();
  private closed = false;
  private chain: Promise<void> = Promise.resolve();
  private readonly waiting = new Map<string, Promise<void>>();

  constructor(private readonly options: WorkspaceOptions) {}

  /**
   * New lint options (the editor's settings changed): every repository is read again with them
   * and each open config's findings published anew.
   */
  async setLint(lint: LintOptions): Promise<void> {
    this.options.lint = lint;
    const old = [...this.repos.values()];
    this.repos.clear();
    for (const r of old) unwatch(r);
    const models = new Map<string, { repo: string; model: string }>();
    for (const file of this.buffers.keys()) {
      const at = locateConfig(file);
      if (at) models.set(`${at.repo}\0${at.model}`, at);
    }
    await Promise.all([...models.values()].map((at) => this.changed(at.repo, at.model)));
  }

  /** The text lint reads for a config: the editor's when open. */
  bufferOf(file: string): string | undefined {
    return this.buffers.get(file);
  }

  /** The repository's lint, read once on first use. */
  repository(repo: string): Repo {
    let r = this.repos.get(repo);
    if (r) return r;
    const lint = new RepositoryLint(repo, this.options.lint ?? {}, (f) => this.buffers.get(f), true);
    const created: Repo = {
      lint,
      byModel: new Map(),
      byFile: new Map(),
      extra: new Map(),
      dirty: new Set(),
      ready: Promise.resolve(),
      listed: Promise.resolve(),
      indexed: false,
    };
    r = created;
    this.repos.set(repo, r);
    created.listed = lint.refresh([], { only: true });
    created.ready = this.index(repo, created).catch((err) =>
      log.warn("cannot read repository", { repo, error: err instanceof Error ? err.message : String(err) }),
    );
    if (this.options.watch !== false) {
      // The repository folder itself, on its own inotify watch: a model folder added or removed,
      // or a link that leads nowhere (which the model watcher never follows), is seen at once,
      // however many models there are.
      try {
        const top = fs.watch(repo, { persistent: false }, (_event, name) => {
          if (typeof name === "string" && name && !name.includes(path.sep) && !isIgnoredEntry(name)) {
            // Watched before it is read, so that what is written into a new folder meanwhile is seen.
            created.watcher?.watch(name);
            void this.changed(repo, name);
          }
        });
        top.on("error", (err) => log.warn("cannot watch repository folder", { repo, error: String(err) }));
        created.top = top;
      } catch (err) {
        log.warn("cannot watch repository folder", { repo, error: String(err) });
      }
      created.watcher = new ModelFolderWatch(repo, (model) => void this.changed(repo, model));
    }
    return r;
  }

  /**
   * Reads every model of a repository in chunks, each a refresh of its own: a change in an open
   * config (queued on the same lint) is answered between two chunks rather than after the whole
   * repository, and the event loop runs between them, so requests are answered while it reads.
   */
  private async index(repo: string, r: Repo): Promise<void> {
    await r.listed;
    const names = r.lint.listedNames();
    let size = 2 * STEP_MIN;
    for (let i = 0; i < names.length && !this.closed;) {
      const chunk = names.slice(i, i + size);
      i += chunk.length;
      // A model already read (opened, or run by one opened) is not read twice.
      const unread = chunk.filter((n) => !r.lint.model(n));
      const started = performance.now();
      if (unread.length) await r.lint.refresh(unread, { relist: false, only: true });
      const took = performance.now() - started;
      if (unread.length >= size / 2)
        size = Math.round(clamp(size * clamp(STEP_MS / Math.max(took, 1), 0.5, 2), STEP_MIN, STEP_MAX));
      for (const n of chunk) this.watchModel(r, n);
      await yieldToEvents();
    }
    if (this.closed) return;
    // Once whole: what lint would say of the repository. Each step above ran the rules across
    // models on what it read and what that is joined to, so nothing is checked twice; models added
    // or removed meanwhile came through the repository folder's watch, and without that watch the
    // folder is listed again.
    await r.lint.refresh([], { relist: !r.top });
    r.indexed = true;
    const all = r.lint.modelNames();
    for (let i = 0; i < all.length && !this.closed; i += PUBLISH_CHUNK) {
      for (const [name, ds] of r.lint.diagnosticsOf(all.slice(i, i + PUBLISH_CHUNK))) this.setModel(r, repo, name, ds);
      this.publishRepo(repo, r);
      await yieldToEvents();
    }
  }

  /** Watches a model read (its folder and version folders) for saves made elsewhere. */
  private watchModel(r: Repo, name: string, recheck = false): void {
    if (!r.watcher) return;
    const m = r.lint.model(name);
    if (m) r.watcher.watch(name, m.layout.subdirs, recheck);
    else if (!r.lint.isListed(name)) r.watcher.unwatch(name);
  }

  /** An open config's text changed (or it was opened); undefined: closed, read the file again. */
  async setBuffer(file: string, text: string | undefined): Promise<void> {
    const at = locateConfig(file);
    if (text === undefined) this.buffers.delete(file);
    else this.buffers.set(file, text);
    if (!at) {
      // A config in no repository: its own text checked alone (syntax and schema), no folder read.
      const ds = text === undefined ? [] : parseModelConfig(text, file, { model: "" }).diagnostics;
      this.options.publish(file, ds.sort(compareDiagnostics));
      return;
    }
    await this.changed(at.repo, at.model, false);
  }

  /**
   * Something of a model changed (its config's text, a file, the folder itself): lint it and what
   * runs it again. Changes wait for the lint before them; a change of a model already waiting is
   * the same lint (it reads the newest text when it starts), so typing faster than lint runs
   * costs no backlog.
   */
  changed(repo: string, model: string, relist = true): Promise<void> {
    const key = `${repo}\0${model}\0${relist}`;
    const waiting = this.waiting.get(key);
    if (waiting) return waiting;
    const run = this.chain.then(() => {
      this.waiting.delete(key);
      return this.relint(repo, model, relist);
    });
    this.waiting.set(key, run);
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async relint(repo: string, model: string, relist: boolean): Promise<void> {
    if (this.closed) return;
    const r = this.repository(repo);
    try {
      // While the repository is being read, this model and the models it runs are read first.
      await r.lint.refresh([model], { relist: relist ? "entries" : false, only: !r.indexed });
      if (relist) this.watchModel(r, model, true);
      const result = r.lint.lintModel(model);
      if (!result.models.some((m) => m.name === model)) this.setModel(r, repo, model, undefined);
      for (const m of result.models) this.setModel(r, repo, m.name, m.diagnostics);
      this.publishRepo(repo, r);
    } catch (err) {
      // A repository that cannot be read (gone, no permission) is no reason to stop serving the
      // editor; a bug in a rule is logged with its stack for a report, and the last findings stay.
      if (err instanceof UserError) log.warn("cannot read repository", { repo, error: err.message });
      else
        log.error("linting failed", {
          repo,
          model,
          error: err instanceof Error ? (err.stack ?? err.message) : String(err),
        });
    }
  }

  /** What is known of a model: its layout and parsed config (the open buffer's when it parses). */
  model(repo: string, name: string): { layout: ModelLayout; parsed?: ParsedConfig } | undefined {
    return this.repos.get(repo)?.lint.model(name);
  }

  /** The repositories of the configs opened so far. */
  repositories(): string[] {
    return [...this.repos.keys()];
  }

  /** Every model folder of the repository as listed, read yet or not. */
  modelNames(repo: string): string[] {
    return this.repos.get(repo)?.lint.listedNames() ?? [];
  }

  /** Resolves once every model of the repository has been read. */
  async ready(repo: string): Promise<void> {
    await this.repository(repo).ready;
  }

  /**
   * Resolves once the models named have been read (while the repository is being read, they are
   * read first): what a request about a config needs of its own model and the models it runs.
   */
  async need(repo: string, names: Iterable<string>): Promise<void> {
    const r = this.repository(repo);
    await r.listed.catch(() => undefined);
    if (r.indexed) return;
    const missing = [...new Set(names)].filter((n) => r.lint.isListed(n) && !r.lint.model(n));
    if (missing.length)
      await r.lint
        .refresh(missing, { relist: false, only: true })
        .catch((err) => log.warn("cannot read models", { repo, models: missing, error: String(err) }));
  }

  /** A model's findings now (undefined: it is gone), put on the files an editor shows them on. */
  private setModel(r: Repo, repo: string, name: string, ds: Diagnostic[] | undefined): void {
    for (const file of r.byModel.get(name)?.keys() ?? []) {
      r.dirty.add(file);
      const holders = r.byFile.get(file);
      holders?.delete(name);
      if (holders?.size === 0) r.byFile.delete(file);
    }
    if (!ds?.length) {
      r.byModel.delete(name);
      return;
    }
    const byFile = new Map<string, Diagnostic[]>();
    for (const d of ds) {
      const file = this.fileOf(d, repo);
      if (!file) continue;
      let list = byFile.get(file);
      if (!list) byFile.set(file, (list = []));
      list.push(d.file === file ? d : { ...d, file });
    }
    r.byModel.set(name, byFile);
    for (const file of byFile.keys()) {
      r.dirty.add(file);
      let holders = r.byFile.get(file);
      if (!holders) r.byFile.set(file, (holders = new Set()));
      holders.add(name);
    }
  }

  /**
   * Publishes the files whose findings changed (and every open config of the repository, whose
   * findings are answered for each version of its text), not the whole repository: at 20,000
   * models that is 20,000 notifications and a stat of every finding's file per keystroke.
   */
  private publishRepo(repo: string, r: Repo): void {
    // Findings no model holds are shown on every config open in the repository, where the user
    // looks: the repository's own (a dangling link, no model at all), and an open config whose
    // model folder is gone (nothing lints or serves it any more).
    const extra = new Map<string, Diagnostic[]>();
    const repoWide = r.lint.repositoryDiagnostics();
    for (const file of this.buffers.keys()) {
      const at = locateConfig(file);
      if (!at || at.repo !== repo) continue;
      const ds: Diagnostic[] = [];
      if (!fs.existsSync(path.join(repo, at.model))) ds.push(modelFolderMissing(at, repo));
      ds.push(...repoWide.map((d) => ({ ...d, file })));
      if (ds.length) extra.set(file, ds);
      r.dirty.add(file);
    }
    for (const file of r.extra.keys()) r.dirty.add(file);
    r.extra = extra;
    const before = this.published.get(repo) ?? new Set<string>();
    this.published.set(repo, before);
    for (const file of r.dirty) {
      const ds: Diagnostic[] = [];
      for (const name of r.byFile.get(file) ?? []) ds.push(...(r.byModel.get(name)?.get(file) ?? []));
      ds.push(...(extra.get(file) ?? []));
      if (ds.length) {
        this.options.publish(file, ds.sort(compareDiagnostics));
        before.add(file);
      } else if (before.delete(file)) this.options.publish(file, []);
    }
    r.dirty.clear();
  }

  /**
   * Where an editor can show a finding: on the file it names when that is a file; a finding on a
   * folder, a link or something that is not there (a model's name, a version folder, a link that
   * loops) is shown on the model's config.pbtxt, whose message names the path.
   */
  private fileOf(d: Diagnostic, repo: string): string | undefined {
    try {
      if (fs.statSync(d.file).isFile() && fs.lstatSync(d.file).isFile()) return d.file;
    } catch {
      // Not there, or a link that leads nowhere: shown on the model's config.
    }
    if (this.buffers.has(d.file)) return d.file;
    const rel = path.relative(repo, d.file);
    if (!rel || rel.startsWith("..") || path.isAbsolute(rel)) return undefined;
    const config = path.join(repo, rel.split(path.sep)[0]!, CONFIG_FILE);
    return this.buffers.has(config) || fs.existsSync(config) ? config : undefined;
  }

  close(): Promise<void> {
    this.closed = true;
    for (const r of this.repos.values()) unwatch(r);
    return Promise.resolve();
  }
}

/** Ends a repository's watches: its folder's, and its models' and version folders'. */
function unwatch(r: Repo): void {
  r.top?.close();
  r.watcher?.close();
}

const clamp = (x: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, x));

/** Lets I/O and the editor's requests run before the next step of a long job. */
function yieldToEvents(): Promise<void> {
  return new Promise<void>((done) => setImmediate(done));
}
