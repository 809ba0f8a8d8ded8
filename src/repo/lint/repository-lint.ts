/**
 * A repository's lint kept between changes (RepositoryLint), for an editor (lsp/workspace.ts):
 * each model read again only when told it changed, with an editor's unsaved text in place of the
 * file (ConfigOverlay), and the rules across models run again on the models a change touches.
 */
import path from "node:path";
import { create } from "@bufbuild/protobuf";
import { type Diagnostic, countBySeverity } from "../diagnostics.js";
import { READ_CONCURRENCY, mapPool } from "../fd-limit.js";
import { ModelConfigSchema } from "../gen/model_config_pb.js";
import {
  CONFIG_FILE,
  type ModelLayout,
  type NotAModelFolder,
  classifyEntry,
  readRepositoryEntries,
} from "../layout.js";
import { modelNameProblem } from "../model-name.js";
import { type ParsedConfig, SourceMap } from "../parse.js";
import { type LintOptions, Reporter } from "../rules.js";
import { ensembleSteps, isEnsemble } from "../rules/ensemble.js";
import { checkAcrossModels } from "./across-models.js";
import { type Analysed, analyseModel } from "./model.js";
import { type LintResult, emptyRepository, notAModelFolder, toResult } from "./result.js";

const NO_SOURCE = new SourceMap();

/**
 * A model that is no ensemble as the rules across models need it: its config without the source
 * map its findings were placed by, and a reporter that holds only its findings (nothing is added
 * to them later: the rules across models report on ensembles).
 */
function slim(m: Analysed): Analysed {
  if (!m.parsed || isEnsemble(m.parsed.config)) return m;
  const reporter = new Reporter(m.name, undefined, m.layout.configFile);
  reporter.diagnostics.push(...m.reporter.diagnostics);
  return { ...m, parsed: { ...m.parsed, source: NO_SOURCE }, reporter };
}

/** The unsaved text of a config.pbtxt open in an editor, by the file's absolute path; undefined: read the file. */
export type ConfigOverlay = (configFile: string) => string | undefined;

interface Baseline {
  diagnostics: number;
  unavailable?: string;
}

/**
 * A repository's lint kept between calls, for an editor: each model is read again only when told
 * it changed (saved, or its unsaved text changed), with the unsaved text of open configs in place
 * of the files' (`overlay`), and the rules across models run again on what is known. The same
 * rules and findings as lintRepository and lintModel.
 */
export class RepositoryLint {
  readonly repo: string;
  private readonly models = new Map<string, Analysed>();
  /** Each model's findings before the rules across models added theirs. */
  private readonly baselines = new Map<string, Baseline>();
  private notModels: NotAModelFolder[] = [];
  private loaded = false;
  /** The model folders as last listed. */
  private listed: string[] | undefined;
  private listedSet: ReadonlySet<string> = new Set();
  /** One refresh at a time: a later one sees what the earlier one read. */
  private queue: Promise<void> = Promise.resolve();
  private readings = 0;
  /**
   * The ensembles that name each model in a step, by the name they use (the model may not
   * exist): what a change of that model can change, found without a pass over every model.
   */
  private readonly usersOf = new Map<string, Set<string>>();

  constructor(
    repo: string,
    private readonly options: LintOptions = {},
    private readonly overlay: ConfigOverlay = () => undefined,
    /**
     * Keep of each model only what later checks read: a model that is no ensemble gets no finding
     * after it is read (the rules across models report on ensembles), so its config's source map
     * is dropped unless it is open. A third of the memory of a repository of 20,000 models.
     */
    private readonly lean = false,
  ) {
    this.repo = path.resolve(repo);
  }

  /**
   * Reads the list of models again, and the models named in `changed` (every model on the first
   * call, and any model not seen before). Throws UserError when the repository cannot be read.
   */
  refresh(changed: Iterable<string> = [], o: { relist?: boolean | "entries"; only?: boolean } = {}): Promise<void> {
    const wanted = new Set(changed);
    const run = this.queue.then(() => this.doRefresh(wanted, o.relist ?? true, o.only ?? false));
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * `relist` false: the changed models' text changed, not the repository's folders (an editor's
   * unsaved change), so the list of models is not read again, unless a changed model is not in it.
   * `"entries"`: only the changed names' entries are looked at again (a watcher saw them change),
   * not the whole folder, which at 20,000 models costs more than the model read.
   */
  private async doRefresh(changed: Set<string>, relist: boolean | "entries", only: boolean): Promise<void> {
    let relisted = false;
    if (relist === true || !this.listed) {
      relisted = !!this.listed;
      const entries = await readRepositoryEntries(this.repo);
      this.notModels = entries.notModels;
      this.listed = entries.models;
      this.listedSet = new Set(entries.models);
    } else if (relist === "entries" || [...changed].some((n) => !this.listedSet.has(n))) {
      relisted = await this.relistEntries(changed);
    }
    const names = this.listed!;
    const taken = this.listedSet;
    /** Models gone from the listing: the ensembles that ran them are checked again. */
    const gone: string[] = [];
    for (const n of [...this.models.keys()]) {
      if (!taken.has(n)) {
        this.forget(n);
        gone.push(n);
      }
    }
    const todo = only
      ? names.filter((n) => changed.has(n))
      : names.filter((n) => changed.has(n) || !this.models.has(n));
    if (!only) this.loaded = true;
    const read = (ns: string[]) =>
      mapPool(ns, READ_CONCURRENCY, async (n) => {
        const open = this.overlay(path.join(this.repo, n, CONFIG_FILE));
        const m = await analyseModel(this.repo, n, this.options, taken, open);
        return this.lean && open === undefined ? slim(m) : m;
      });
    const readNow = [...todo];
    for (const m of await read(todo)) this.remember(m);
    // `only`: the models the changed ones run (ensemble steps, transitively) that were not read
    // yet, and nothing else, so the first findings of one model of a large repository need only
    // what they depend on.
    let frontier = only ? todo : [];
    while (frontier.length) {
      const next = new Set<string>();
      for (const n of frontier)
        for (const s of ensembleSteps(this.models.get(n)?.parsed?.config ?? create(ModelConfigSchema)))
          if (taken.has(s.modelName) && !this.models.has(s.modelName)) next.add(s.modelName);
      frontier = [...next];
      readNow.push(...frontier);
      for (const m of await read(frontier)) this.remember(m);
    }
    // The rules across models, on the models linked by ensemble steps (either way) to those read
    // now or gone: a model's findings across models depend on nothing outside those links, so the
    // rest keep theirs, and a change costs what it touches, not the repository.
    // A missing step's hint names the repository's models: when they change, every ensemble with
    // a missing (or unservable) step is checked again.
    const hinted = relisted ? [...this.usersOf.keys()].filter((n) => !this.models.has(n) || modelNameProblem(n)) : [];
    const scope = this.linkedTo([...readNow, ...gone, ...hinted]);
    for (const [n, m] of scope) {
      const b = this.baselines.get(n)!;
      m.reporter.diagnostics.length = b.diagnostics;
      m.unavailable = b.unavailable;
      m.errorCount = countBySeverity(m.reporter.diagnostics).errors;
    }
    checkAcrossModels(scope, this.listed);
    this.readings++;
  }

  /** How many refreshes have finished: a cache of what is known is stale once this moves. */
  get generation(): number {
    return this.readings;
  }

  /**
   * The models joined to `names` through ensemble steps, in either direction and transitively
   * (their connected part of the step graph): checking the rules across models on it gives each
   * of its models what a check on the whole repository gives (the graph's other parts share no
   * model with it, and cycles are found from the same starts in the same order).
   */
  private linkedTo(names: Iterable<string>): Map<string, Analysed> {
    const scope = new Map<string, Analysed>();
    const seen = new Set<string>();
    const queue = [...names];
    while (queue.length) {
      const n = queue.pop()!;
      if (seen.has(n)) continue;
      seen.add(n);
      const m = this.models.get(n);
      if (m) {
        scope.set(n, m);
        if (m.parsed) for (const s of ensembleSteps(m.parsed.config)) queue.push(s.modelName);
      }
      for (const u of this.usersOf.get(n) ?? []) queue.push(u);
    }
    return scope;
  }

  /** Lists again only the repository's entries named (a model folder added, removed, or a link changed). */
  private async relistEntries(names: Iterable<string>): Promise<boolean> {
    const listed = new Set(this.listed);
    const notModels = new Map(this.notModels.map((e) => [e.name, e]));
    for (const n of new Set(names)) {
      const kind = await classifyEntry(this.repo, n);
      notModels.delete(n);
      if (kind === "model") listed.add(n);
      else {
        listed.delete(n);
        if (typeof kind === "object") notModels.set(n, kind);
      }
    }
    const changed = listed.size !== this.listedSet.size || [...listed].some((n) => !this.listedSet.has(n));
    this.listed = [...listed].sort();
    this.listedSet = listed;
    this.notModels = [...notModels.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
    return changed;
  }

  private unindex(name: string): void {
    const old = this.models.get(name);
    if (old?.parsed)
      for (const s of ensembleSteps(old.parsed.config)) {
        const users = this.usersOf.get(s.modelName);
        users?.delete(name);
        if (users?.size === 0) this.usersOf.delete(s.modelName);
      }
  }

  private forget(name: string): void {
    this.unindex(name);
    this.models.delete(name);
    this.baselines.delete(name);
  }

  private remember(m: Analysed): void {
    // Kept in its place in the map (lintRepository lists models in the order first read).
    this.unindex(m.name);
    if (m.parsed)
      for (const s of ensembleSteps(m.parsed.config)) {
        let users = this.usersOf.get(s.modelName);
        if (!users) this.usersOf.set(s.modelName, (users = new Set()));
        users.add(m.name);
      }
    this.models.set(m.name, m);
    this.baselines.set(m.name, {
      diagnostics: m.reporter.diagnostics.length,
      ...(m.unavailable ? { unavailable: m.unavailable } : {}),
    });
  }

  /** Every model folder of the repository as last listed (read or not yet), sorted. */
  listedNames(): string[] {
    return this.listed ?? [];
  }

  /** Whether a model folder of that name was listed. */
  isListed(name: string): boolean {
    return this.listedSet.has(name);
  }

  /** Whether every listed model has been read (a refresh without `only` has run). */
  get complete(): boolean {
    return this.loaded;
  }

  /** The model names known at the last refresh, sorted. */
  modelNames(): string[] {
    return [...this.models.keys()].sort();
  }

  /** What the last refresh knows of a model: its folder's layout, and its parsed config when it parsed. */
  model(name: string): { layout: ModelLayout; parsed?: ParsedConfig } | undefined {
    const m = this.models.get(name);
    return m ? { layout: m.layout, ...(m.parsed ? { parsed: m.parsed } : {}) } : undefined;
  }

  /** `lintModel`'s answer from what is known: the model and every ensemble that runs it. */
  lintModel(name: string): LintResult {
    const wanted = new Set<string>();
    const queue = [name];
    while (queue.length) {
      const n = queue.pop()!;
      if (wanted.has(n)) continue;
      wanted.add(n);
      queue.push(...(this.usersOf.get(n) ?? []));
    }
    return toResult(
      [...wanted]
        .filter((n) => this.models.has(n))
        .sort()
        .map((n) => this.models.get(n)!),
    );
  }

  /** Each of the named models' findings as `lintRepository` gives them (a model not read yet: none). */
  diagnosticsOf(names: Iterable<string>): Map<string, Diagnostic[]> {
    const known = [...names].map((n) => this.models.get(n)).filter((m): m is Analysed => !!m);
    return new Map(toResult(known).models.map((m) => [m.name, m.diagnostics]));
  }

  /** `lintRepository`'s answer from what is known. */
  lintRepository(): LintResult {
    // In the listing's order, as lintRepository's (models read later are not last).
    return toResult(
      this.modelNames().map((n) => this.models.get(n)!),
      this.repositoryDiagnostics(),
    );
  }

  /** The findings on the repository as a whole (`LintResult.repositoryDiagnostics`), from what is known. */
  repositoryDiagnostics(): Diagnostic[] {
    return [...(this.models.size === 0 ? [emptyRepository(this.repo)] : []), ...this.notModels.map(notAModelFolder)];
  }
}
