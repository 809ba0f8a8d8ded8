import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { TextDocument } from "vscode-languageserver-textdocument";
import {
  type Connection,
  type DocumentSymbol,
  type FoldingRange,
  FoldingRangeKind,
  MessageType,
  ShowMessageNotification,
  type InitializeParams,
  type Location as LspLocation,
  type Range,
  ResponseError,
  ErrorCodes,
  type ServerCapabilities,
  type SymbolInformation,
  SymbolKind,
  type TextDocumentEdit,
  type TextDocuments,
  type TextEdit,
  type WorkspaceEdit,
} from "vscode-languageserver/node";
import { ENSEMBLE_PLATFORM } from "../repo/backends.js";
import type { ModelConfig } from "../repo/gen/model_config_pb.js";
import { CONFIG_FILE, MAX_CONFIG_BYTES } from "../repo/layout.js";
import { modelNameProblem } from "../repo/model-name.js";
import { type Hover, tensorDecls } from "./features.js";
import {
  type LooseField,
  type LooseMessage,
  type LooseScalar,
  looseParse,
  looseTokens,
  messagesOf,
  scalarNodeOf,
  scalarOf,
  stepMessages,
  tokenAt,
} from "./syntax.js";
import { type Workspace, locateConfig } from "./workspace.js";

/**
 * Navigation across a repository's configs: tensor hover and definitions, references, rename,
 * the outline, folding and workspace symbols. What a name refers to is read from the loose syntax
 * tree (syntax.ts) of each config (the editor's text when open), and which configs are ensembles
 * from lint's parsed configs, so a repository of thousands of models is walked without parsing
 * each of them again.
 */

/** Whether a parsed config runs steps (as lint's ensemble rules take it). */
const isEnsemble = (c: ModelConfig): boolean =>
  c.platform === ENSEMBLE_PLATFORM || c.schedulingChoice.case === "ensembleScheduling";

const toPath = (uri: string): string | undefined => {
  try {
    return uri.startsWith("file:") ? fileURLToPath(uri) : undefined;
  } catch {
    return undefined;
  }
};

/** A config's text as the editor has it (open) or lint read it. */
export interface ConfigText {
  model: string;
  file: string;
  text: string;
}

/** What navigation needs of the repository around a config. */
export interface NavRepo {
  self: ConfigText;
  config(model: string): ConfigText | undefined;
  /** Every config of the repository that has ensemble steps (the self config included when it has). */
  ensembles(): ConfigText[];
}

/** What a name in a config refers to: a model, or a tensor of a model (an ensemble's own tensor: `internal`). */
export type Target =
  | { kind: "model"; model: string }
  | { kind: "tensor"; model: string; io: "input" | "output" | "internal"; name: string };

/** One place a target is named. Offsets cover the name without its quotes. */
export interface Occurrence {
  file: string;
  model: string;
  start: number;
  end: number;
  declaration: boolean;
  /** The ensemble step holding it, for a step's model_name or a map entry. */
  step?: { index: number; model: string; map?: "input_map" | "output_map"; key?: string; value?: string };
}

interface MapEntry {
  message: LooseMessage;
  key?: LooseScalar;
  value?: LooseScalar;
}

interface Step {
  index: number;
  message: LooseMessage;
  model?: LooseScalar;
  input_map: MapEntry[];
  output_map: MapEntry[];
}

/** The steps of a tree, read once per tree (trees are kept per text, see TreeCache). */
const stepsRead = new WeakMap<LooseMessage, Step[]>();
function stepsIn(tree: LooseMessage): Step[] {
  let steps = stepsRead.get(tree);
  if (!steps) stepsRead.set(tree, (steps = readSteps(tree)));
  return steps;
}

function readSteps(tree: LooseMessage): Step[] {
  return stepMessages(tree).map((message, index) => {
    const entries = (map: string): MapEntry[] =>
      messagesOf(message, map).map((e) => {
        const key = scalarNodeOf(e, "key");
        const value = scalarNodeOf(e, "value");
        return { message: e, ...(key ? { key } : {}), ...(value ? { value } : {}) };
      });
    const model = scalarNodeOf(message, "model_name");
    return {
      index,
      message,
      ...(model ? { model } : {}),
      input_map: entries("input_map"),
      output_map: entries("output_map"),
    };
  });
}

/** A value's span without its quotes, when it is a string (a half-typed string: to where it stops). */
function innerSpan(text: string, start: number, end: number): { start: number; end: number } {
  const q = text[start];
  if (q !== '"' && q !== "'") return { start, end };
  const closed = end - start >= 2 && text[end - 1] === q;
  return { start: start + 1, end: closed ? end - 1 : end };
}

const inner = (s: LooseScalar, text: string) => innerSpan(text, s.start, s.end);

/** The kind of an ensemble's own tensor: declared as its input, its output, or only passed between steps. */
function ensembleTensorKind(text: string, tree: LooseMessage, name: string): "input" | "output" | "internal" {
  const decls = tensorDecls(text, tree);
  if (decls.input.some((d) => d.name === name)) return "input";
  if (decls.output.some((d) => d.name === name)) return "output";
  return "internal";
}

/** Loose trees by file, kept while the text is the same (an ensemble is read once per edit, not per request). */
class TreeCache {
  private readonly trees = new Map<string, { text: string; tree: LooseMessage }>();
  get(c: ConfigText): LooseMessage {
    const known = this.trees.get(c.file);
    if (known?.text === c.text) return known.tree;
    const tree = looseParse(c.text);
    this.trees.set(c.file, { text: c.text, tree });
    return tree;
  }
}

/** What the name at `offset` refers to, and the span of the name. */
export function targetAt(
  text: string,
  tree: LooseMessage,
  offset: number,
  self: string,
): { target: Target; start: number; end: number; declaration: boolean } | undefined {
  const at = tokenAt(tree, offset);
  if (!at || at.role !== "value" || at.token.type !== "string") return undefined;
  const names = at.path.map((f) => f.name);
  const value = at.token.value;
  const span = innerSpan(text, at.token.start, at.token.end);
  if (names.length === 1 && names[0] === "name")
    return { target: { kind: "model", model: self }, ...span, declaration: true };
  if (names.length === 2 && (names[0] === "input" || names[0] === "output") && names[1] === "name")
    return { target: { kind: "tensor", model: self, io: names[0], name: value }, ...span, declaration: true };
  if (names[0] !== "ensemble_scheduling" || names[1] !== "step") return undefined;
  // The step message holds the field below `step`.
  const step = at.messages[2];
  if (!step) return undefined;
  if (names.length === 3 && names[2] === "model_name")
    return { target: { kind: "model", model: value }, ...span, declaration: false };
  const map = names[2];
  if (names.length === 4 && (map === "input_map" || map === "output_map")) {
    if (names[3] === "key") {
      const model = scalarOf(step, "model_name");
      if (!model) return undefined;
      const io = map === "input_map" ? "input" : "output";
      return { target: { kind: "tensor", model, io, name: value }, ...span, declaration: false };
    }
    if (names[3] === "value") {
      const io = ensembleTensorKind(text, tree, value);
      return { target: { kind: "tensor", model: self, io, name: value }, ...span, declaration: false };
    }
  }
  return undefined;
}

/** Every place the repository names a target: its declaration first, then each use. */
export function occurrences(target: Target, repo: NavRepo, trees = new TreeCache()): Occurrence[] {
  const out: Occurrence[] = [];
  const own = repo.config(target.model);
  const ownTree = own ? trees.get(own) : undefined;
  if (target.kind === "model") {
    const name = ownTree && scalarNodeOf(ownTree, "name");
    if (own && name) out.push({ file: own.file, model: own.model, ...inner(name, own.text), declaration: true });
    for (const e of repo.ensembles()) {
      const text = e.text;
      for (const s of stepsIn(trees.get(e)))
        if (s.model?.token.value === target.model)
          out.push({
            file: e.file,
            model: e.model,
            ...inner(s.model, text),
            declaration: false,
            step: { index: s.index, model: target.model },
          });
    }
    return out;
  }
  if (own && ownTree) {
    if (target.io !== "internal") {
      for (const d of tensorDecls(own.text, ownTree)[target.io])
        if (d.name === target.name)
          out.push({
            file: own.file,
            model: own.model,
            ...innerSpan(own.text, d.start, d.end),
            declaration: true,
          });
    }
    // The ensemble's own steps read and write its tensors by name (the map values).
    if (ensembleTensorKind(own.text, ownTree, target.name) === target.io)
      for (const s of stepsIn(ownTree))
        for (const map of ["input_map", "output_map"] as const)
          for (const e of s[map])
            if (e.value?.token.value === target.name)
              out.push({
                file: own.file,
                model: own.model,
                ...inner(e.value, own.text),
                declaration: false,
                step: {
                  index: s.index,
                  model: s.model?.token.value ?? "",
                  map,
                  ...(e.key ? { key: e.key.token.value } : {}),
                  value: target.name,
                },
              });
  }
  if (target.io === "internal") return out;
  // Ensembles that run the model name its inputs and outputs as their steps' map keys.
  const map = target.io === "input" ? "input_map" : "output_map";
  for (const e of repo.ensembles()) {
    if (e.model === target.model) continue;
    for (const s of stepsIn(trees.get(e))) {
      if (s.model?.token.value !== target.model) continue;
      for (const entry of s[map])
        if (entry.key?.token.value === target.name)
          out.push({
            file: e.file,
            model: e.model,
            ...inner(entry.key, e.text),
            declaration: false,
            step: {
              index: s.index,
              model: target.model,
              map,
              key: target.name,
              ...(entry.value ? { value: entry.value.token.value } : {}),
            },
          });
    }
  }
  return out;
}

/** Why a tensor cannot take `name`: its model (or ensemble) already has a tensor of that name. */
function tensorNameTaken(
  target: Extract<Target, { kind: "tensor" }>,
  name: string,
  repo: NavRepo,
  trees: TreeCache,
): string | undefined {
  const c = repo.config(target.model);
  if (!c) return undefined;
  const tree = trees.get(c);
  const decls = tensorDecls(c.text, tree);
  if (target.io !== "internal" && decls[target.io].some((d) => d.name === name))
    return `is already an ${target.io} of '${target.model}'`;
  // An ensemble's tensors share one namespace: its inputs, outputs and what its steps pass on.
  const steps = stepsIn(tree);
  const used =
    decls.input.some((d) => d.name === name) ||
    decls.output.some((d) => d.name === name) ||
    steps.some((s) => [...s.input_map, ...s.output_map].some((e) => e.value?.token.value === name));
  if (steps.length && used) return `already names a tensor of ensemble '${target.model}'`;
  return undefined;
}

const code = (s: string) => `\`${s.replace(/`/g, "'")}\``;

/** The markdown of a tensor's hover: what it is, its type and shape, and where it is used. */
export function tensorHoverText(
  target: Extract<Target, { kind: "tensor" }>,
  repo: NavRepo,
  complete: boolean,
  trees = new TreeCache(),
): string {
  const occ = occurrences(target, repo, trees);
  let head: string;
  const typed = (model: string, io: "input" | "output", name: string): string | undefined => {
    const c = repo.config(model);
    const d = c && tensorDecls(c.text, trees.get(c))[io].find((x) => x.name === name);
    if (!d) return undefined;
    return `${code(d.dataType ?? "data_type not given")} ${code(d.dims ?? "dims not given")}`;
  };
  if (target.io === "internal") {
    const writers = occ.filter((o) => o.step?.map === "output_map");
    const typesOf = writers.map((w) => (w.step?.key ? typed(w.step.model, "output", w.step.key) : undefined));
    head = `**${target.name}**: passed between the steps of ensemble ${code(target.model)}`;
    const t = typesOf.find(Boolean);
    if (t) head += `, ${t}`;
    if (!writers.length) head += "; no step writes it";
  } else {
    const t = typed(target.model, target.io, target.name);
    head = `**${target.name}**: ${target.io} of ${code(target.model)}, ${t ?? `not declared in its ${target.io}`}`;
  }
  const uses = occ
    .filter((o) => o.step?.map)
    .map((o) => {
      const s = o.step!;
      const arrow = s.map === "input_map" ? "←" : "→";
      return `- ${code(o.model)} step ${s.index + 1} runs ${code(s.model || "?")}: ${s.map} ${code(s.key ?? "?")} ${arrow} ${code(s.value ?? "?")}`;
    });
  const more = complete ? "" : "\n\n(the repository is still being read: other ensembles may use it too)";
  return `${head}\n\n${uses.length ? `Used by:\n${uses.join("\n")}` : "No ensemble step uses it."}${more}`;
}

/** The most workspace symbols one query answers (README.md gives it). */
export const SYMBOL_CAP = 100;

interface RepoIndex {
  /** The lint's generation it was built at. */
  generation: number;
  /** The ensembles as lint read them. */
  ensembles: ConfigText[];
  /** Every model with its name lowercased for workspace symbols, and its tensors' names. */
  models: Array<{ model: string; lower: string; inputs: string[]; outputs: string[] }>;
}

export interface NavigationOptions {
  connection: Connection;
  documents: TextDocuments<TextDocument>;
  workspace: Workspace;
  /** The most workspace symbols one query answers (default SYMBOL_CAP; tests reach it with fewer models). */
  symbolCap?: number;
}

/**
 * The LSP side of navigation: the capabilities it adds to initialize's answer, the requests it
 * answers, and its additions to the server's hover and definition.
 */
export class Navigation {
  private documentChanges = false;
  private folderRenames = false;
  private readonly trees = new TreeCache();
  private readonly indexes = new Map<string, RepoIndex>();

  constructor(private readonly o: NavigationOptions) {}

  initialize(params: InitializeParams): ServerCapabilities {
    const ws = params.capabilities.workspace?.workspaceEdit;
    this.documentChanges = ws?.documentChanges === true;
    // Neovim before 0.9 announces renames but fails on a folder ("E502: is a directory", fixed by
    // neovim/neovim#22289): it gets the edits and the message, as an editor without renames does.
    const info = params.clientInfo;
    const [major = 0, minor = 0] = (info?.version ?? "").split(".").map(Number);
    const foldersFail = info?.name === "Neovim" && major === 0 && minor < 9;
    this.folderRenames = this.documentChanges && ws?.resourceOperations?.includes("rename") === true && !foldersFail;
    return {
      referencesProvider: true,
      renameProvider: { prepareProvider: true },
      documentSymbolProvider: true,
      foldingRangeProvider: true,
      workspaceSymbolProvider: true,
    };
  }

  private uri = (file: string) => pathToFileURL(file).href;

  private textOf(file: string, repo: string | undefined, model: string | undefined): string | undefined {
    const open = this.o.documents.get(this.uri(file))?.getText();
    if (open !== undefined) return open;
    if (repo && model) return this.o.workspace.model(repo, model)?.layout.configText;
    return undefined;
  }

  /** The repository around an open config (one of its own when it is in none). */
  private repoFor(file: string, text: string): { nav: NavRepo; repo?: string } {
    const at = locateConfig(file);
    const selfTree = this.trees.get({ model: at?.model ?? "", file, text });
    const self: ConfigText = { model: at?.model ?? "", file, text };
    if (!at) {
      return {
        nav: {
          self,
          config: (m) => (m === self.model ? self : undefined),
          ensembles: () => (stepsIn(selfTree).length ? [self] : []),
        },
      };
    }
    const { repo } = at;
    const config = (model: string): ConfigText | undefined => {
      if (model === at.model) return self;
      const f = path.join(repo, model, CONFIG_FILE);
      const t = this.textOf(f, repo, model);
      return t === undefined ? undefined : { model, file: f, text: t };
    };
    const ensembles = (): ConfigText[] => {
      // The editor's open configs of this repository, by model (a few), looked up once: their
      // text, not what lint last read, says whether they are ensembles.
      const opened = new Map<string, string>();
      for (const doc of this.o.documents.all()) {
        const p = toPath(doc.uri);
        const loc = p ? locateConfig(p) : undefined;
        if (loc?.repo === repo && p === loc.configFile) opened.set(loc.model, doc.getText());
      }
      opened.set(at.model, text);
      const out = this.indexOf(repo).ensembles.filter((e) => !opened.has(e.model));
      for (const [model, open] of opened) {
        const f = path.join(repo, model, CONFIG_FILE);
        if (stepsIn(this.trees.get({ model, file: f, text: open })).length) out.push({ model, file: f, text: open });
      }
      return out;
    };
    return { nav: { self, config, ensembles }, repo };
  }

  /**
   * What navigation needs of every model of a repository (which are ensembles, the tensor names),
   * kept until lint reads anything again (its generation): a request then looks at the
   * repository's ensembles, not at each of its models.
   */
  private indexOf(repo: string): RepoIndex {
    const lint = this.o.workspace.repository(repo).lint;
    const known = this.indexes.get(repo);
    if (known?.generation === lint.generation) return known;
    const index: RepoIndex = { generation: lint.generation, ensembles: [], models: [] };
    for (const model of this.o.workspace.modelNames(repo)) {
      const m = this.o.workspace.model(repo, model);
      const c = m?.parsed?.config;
      index.models.push({
        model,
        lower: model.toLowerCase(),
        inputs: c ? c.input.map((x) => x.name) : [],
        outputs: c ? c.output.map((x) => x.name) : [],
      });
      const t = m?.layout.configText;
      if (t === undefined) continue;
      // Lint's parsed config says which models are ensembles; only a config that did not parse is read loosely.
      if (c && !isEnsemble(c)) continue;
      const f = path.join(repo, model, CONFIG_FILE);
      if (c || stepsIn(this.trees.get({ model, file: f, text: t })).length)
        index.ensembles.push({ model, file: f, text: t });
    }
    this.indexes.set(repo, index);
    return index;
  }

  private complete(repo: string | undefined): boolean {
    return repo === undefined || this.o.workspace.repository(repo).lint.complete;
  }

  private docOf(uri: string): { doc: TextDocument; file: string } | undefined {
    const doc = this.o.documents.get(uri);
    if (!doc || doc.getText().length > MAX_CONFIG_BYTES) return undefined;
    const file = toPath(uri);
    if (!file || path.basename(file) !== CONFIG_FILE) return undefined;
    return { doc, file };
  }

  /**
   * The server's hover on a tensor name, with where the repository uses it (the field's hover
   * kept for a declaration: the model file's view of it).
   */
  async hover(file: string, text: string, offset: number, field: Hover | undefined): Promise<Hover | undefined> {
    const { nav, repo } = this.repoFor(file, text);
    const t = targetAt(text, this.trees.get(nav.self), offset, nav.self.model);
    if (!t || t.target.kind !== "tensor") return field;
    if (repo) await this.o.workspace.need(repo, [t.target.model]);
    const md = tensorHoverText(t.target, nav, this.complete(repo), this.trees);
    const extra = t.declaration && field ? `\n\n${field.markdown}` : "";
    return { markdown: md + extra, start: t.start, end: t.end };
  }

  /**
   * Definitions beyond the server's own: an ensemble tensor passed between steps also leads to
   * the output declaration of the step model that writes it.
   */
  definitions(
    file: string,
    text: string,
    offset: number,
    first: LspLocation | null,
  ): LspLocation[] | LspLocation | null {
    const { nav } = this.repoFor(file, text);
    const t = targetAt(text, this.trees.get(nav.self), offset, nav.self.model);
    if (!t || t.target.kind !== "tensor" || t.target.io !== "internal") return first;
    const more: LspLocation[] = [];
    for (const o of occurrences(t.target, nav, this.trees)) {
      if (o.step?.map !== "output_map" || !o.step.key) continue;
      const c = nav.config(o.step.model);
      const d = c && tensorDecls(c.text, this.trees.get(c)).output.find((x) => x.name === o.step!.key);
      if (c && d) more.push(this.location(c.file, c.text, d.start, d.end));
    }
    if (!more.length) return first;
    return first ? [first, ...more] : more;
  }

  private location(file: string, text: string, start: number, end: number): LspLocation {
    const doc = TextDocument.create(this.uri(file), "pbtxt", 0, text);
    return { uri: this.uri(file), range: { start: doc.positionAt(start), end: doc.positionAt(end) } };
  }

  /** Every occurrence of what the cursor names, across the repository once it has been read whole. */
  private async resolve(
    uri: string,
    position: { line: number; character: number },
  ): Promise<
    | {
        target: Target;
        occ: Occurrence[];
        nav: NavRepo;
        repo?: string;
        span: { start: number; end: number };
        doc: TextDocument;
      }
    | undefined
  > {
    const d = this.docOf(uri);
    if (!d) return undefined;
    const text = d.doc.getText();
    const { nav, repo } = this.repoFor(d.file, text);
    const t = targetAt(text, this.trees.get(nav.self), d.doc.offsetAt(position), nav.self.model);
    if (!t) return undefined;
    // References and rename must be whole: they wait for the repository's first reading.
    if (repo) await this.o.workspace.ready(repo);
    return {
      target: t.target,
      occ: occurrences(t.target, nav, this.trees),
      nav,
      ...(repo ? { repo } : {}),
      span: t,
      doc: d.doc,
    };
  }

  private editsByFile(
    occ: Occurrence[],
    nav: NavRepo,
    newText: string,
  ): Map<string, { text: string; edits: TextEdit[] }> {
    const byFile = new Map<string, { text: string; edits: TextEdit[] }>();
    for (const o of occ) {
      const text = o.file === nav.self.file ? nav.self.text : nav.config(o.model)?.text;
      if (text === undefined) continue;
      let e = byFile.get(o.file);
      if (!e) byFile.set(o.file, (e = { text, edits: [] }));
      const doc = TextDocument.create(this.uri(o.file), "pbtxt", 0, text);
      e.edits.push({ range: { start: doc.positionAt(o.start), end: doc.positionAt(o.end) }, newText });
    }
    return byFile;
  }

  listen(): void {
    const { connection } = this.o;

    connection.onReferences(async (params) => {
      const r = await this.resolve(params.textDocument.uri, params.position);
      if (!r) return [];
      return r.occ
        .filter((o) => params.context.includeDeclaration || !o.declaration)
        .map((o) =>
          this.location(
            o.file,
            o.file === r.nav.self.file ? r.nav.self.text : (r.nav.config(o.model)?.text ?? ""),
            o.start,
            o.end,
          ),
        );
    });

    connection.onPrepareRename((params) => {
      const d = this.docOf(params.textDocument.uri);
      if (!d) return null;
      const text = d.doc.getText();
      const at = locateConfig(d.file);
      const t = targetAt(
        text,
        this.trees.get({ model: at?.model ?? "", file: d.file, text }),
        d.doc.offsetAt(params.position),
        at?.model ?? "",
      );
      if (!t) return null;
      const placeholder = t.target.kind === "model" ? t.target.model : t.target.name;
      return { range: { start: d.doc.positionAt(t.start), end: d.doc.positionAt(t.end) }, placeholder };
    });

    connection.onRenameRequest(async (params) => {
      const r = await this.resolve(params.textDocument.uri, params.position);
      if (!r) return null;
      const newName = params.newName;
      const oldName = r.target.kind === "model" ? r.target.model : r.target.name;
      if (newName === oldName) return { changes: {} };
      if (!newName || /["'\\\u0000-\u001f\u007f]/u.test(newName))
        throw new ResponseError(
          ErrorCodes.InvalidParams,
          `'${newName}' cannot be a name here: give one without quotes, backslashes or control characters`,
        );
      let move: { from: string; to: string } | undefined;
      if (r.target.kind === "model") {
        const problem =
          modelNameProblem(newName) ??
          (newName.startsWith(".") ? "starts with '.', which Triton skips as a hidden folder" : undefined);
        if (problem)
          throw new ResponseError(ErrorCodes.InvalidParams, `'${newName}' cannot be a model name: it ${problem}`);
        if (!r.repo)
          throw new ResponseError(
            ErrorCodes.InvalidRequest,
            "this config is in no model repository: there is no model folder to rename",
          );
        const from = path.join(r.repo, r.target.model);
        const to = path.join(r.repo, newName);
        if (fs.existsSync(to))
          throw new ResponseError(
            ErrorCodes.InvalidParams,
            `a model '${newName}' is already in ${r.repo}: pick another name`,
          );
        if (fs.existsSync(from)) move = { from, to };
      }
      if (r.target.kind === "tensor") {
        const taken = tensorNameTaken(r.target, newName, r.nav, this.trees);
        if (taken) throw new ResponseError(ErrorCodes.InvalidParams, `'${newName}' ${taken}: pick another name`);
      }
      const byFile = this.editsByFile(r.occ, r.nav, newName);
      if (!byFile.size && !move) return null;
      let edit: WorkspaceEdit;
      if (this.documentChanges) {
        const docEdits: TextDocumentEdit[] = [...byFile].map(([file, e]) => ({
          textDocument: { uri: this.uri(file), version: this.o.documents.get(this.uri(file))?.version ?? null },
          edits: e.edits,
        }));
        // The text first: after the folder moves, the config's old address is gone.
        edit = {
          documentChanges: [
            ...docEdits,
            ...(move && this.folderRenames
              ? [{ kind: "rename" as const, oldUri: this.uri(move.from), newUri: this.uri(move.to) }]
              : []),
          ],
        };
      } else {
        edit = { changes: Object.fromEntries([...byFile].map(([file, e]) => [this.uri(file), e.edits])) };
      }
      if (move && !this.folderRenames)
        void connection.sendNotification(ShowMessageNotification.type, {
          type: MessageType.Warning,
          message: `Renamed '${oldName}' to '${newName}' in the configs; move the folder ${move.from} to ${move.to} yourself: Triton takes a model's name from its folder, and this editor cannot rename folders.`,
        });
      return edit;
    });

    connection.onDocumentSymbol((params) => {
      const d = this.docOf(params.textDocument.uri);
      if (!d) return [];
      return documentSymbols(
        d.doc,
        this.trees.get({ model: "", file: d.file, text: d.doc.getText() }),
        locateConfig(d.file)?.model,
      );
    });

    connection.onFoldingRanges((params) => {
      const d = this.docOf(params.textDocument.uri);
      return d ? foldingRanges(d.doc.getText()) : [];
    });

    connection.onWorkspaceSymbol((params) => this.workspaceSymbols(params.query));
  }

  /** Models and their tensors whose name contains the query, across the repositories opened so far, at most 100. */
  workspaceSymbols(query: string): SymbolInformation[] {
    const cap = this.o.symbolCap ?? SYMBOL_CAP;
    const q = query.toLowerCase();
    const out: SymbolInformation[] = [];
    const matches = (s: string) => !q || s.toLowerCase().includes(q);
    for (const repo of this.o.workspace.repositories()) {
      for (const { model, lower, inputs, outputs } of this.indexOf(repo).models) {
        if (out.length >= cap) return out;
        // Most models match nothing: they cost a look at their names, nothing allocated or read.
        const self = !q || lower.includes(q);
        const hits: Array<{ k: "input" | "output"; name: string }> = [];
        for (const name of inputs) if (matches(name)) hits.push({ k: "input", name });
        for (const name of outputs) if (matches(name)) hits.push({ k: "output", name });
        if (!self && !hits.length) continue;
        const f = path.join(repo, model, CONFIG_FILE);
        const text = this.textOf(f, repo, model) ?? "";
        const tree = this.trees.get({ model, file: f, text });
        if (self) {
          const name = scalarNodeOf(tree, "name");
          const span = name ? inner(name, text) : { start: 0, end: 0 };
          out.push({
            name: model,
            kind: SymbolKind.Module,
            location: this.location(f, text, span.start, span.end),
            containerName: repo,
          });
        }
        const decls = tensorDecls(text, tree);
        for (const h of hits) {
          if (out.length >= cap) return out;
          const decl = decls[h.k].find((x) => x.name === h.name);
          out.push({
            name: h.name,
            kind: SymbolKind.Variable,
            location: this.location(f, text, decl?.start ?? 0, decl?.end ?? 0),
            containerName: `${model} ${h.k}`,
          });
        }
      }
    }
    return out;
  }
}

/**
 * The outline: the model, then its fields in order, with inputs, outputs, instance groups and
 * ensemble steps (and their maps) opened up.
 */
export function documentSymbols(doc: TextDocument, tree: LooseMessage, folder: string | undefined): DocumentSymbol[] {
  const text = doc.getText();
  const range = (start: number, end: number): Range => ({
    start: doc.positionAt(start),
    end: doc.positionAt(Math.max(start, end)),
  });
  const fieldRange = (f: LooseField) => range(f.nameStart, f.end);
  const nameOf = scalarNodeOf(tree, "name");
  const runs = scalarOf(tree, "backend") ?? scalarOf(tree, "platform");
  const children: DocumentSymbol[] = [];
  const entryOf = (
    m: LooseMessage,
    label: string,
    kind: SymbolKind,
    detail: string | undefined,
    sel?: LooseScalar,
    kids: DocumentSymbol[] = [],
  ): DocumentSymbol => ({
    name: label || "(unnamed)",
    kind,
    ...(detail ? { detail } : {}),
    range: range(m.start, m.end),
    selectionRange: sel ? range(inner(sel, text).start, inner(sel, text).end) : range(m.start, m.start + 1),
    ...(kids.length ? { children: kids } : {}),
  });
  for (const f of tree.fields) {
    const msgs = f.values.filter((v): v is LooseMessage => v.kind === "message");
    const sel = range(f.nameStart, f.nameEnd);
    let kids: DocumentSymbol[] = [];
    let kind: SymbolKind = msgs.length ? SymbolKind.Struct : SymbolKind.Field;
    let detail: string | undefined;
    if (f.name === "input" || f.name === "output") {
      kind = SymbolKind.Array;
      kids = msgs.map((m) => {
        const n = scalarNodeOf(m, "name");
        const dims = m.fields
          .find((x) => x.name === "dims")
          ?.values.filter((x): x is LooseScalar => x.kind === "scalar")
          .map((x) => x.token.value);
        const dt = scalarOf(m, "data_type");
        return entryOf(
          m,
          n?.token.value ?? "",
          SymbolKind.Variable,
          [dt, dims ? `[${dims.join(", ")}]` : undefined].filter(Boolean).join(" ") || undefined,
          n,
        );
      });
    } else if (f.name === "instance_group") {
      kind = SymbolKind.Array;
      kids = msgs.map((m, i) => {
        const label = scalarOf(m, "name") ?? `group ${i + 1}`;
        const detail = [scalarOf(m, "count") ? `count ${scalarOf(m, "count")}` : undefined, scalarOf(m, "kind")]
          .filter(Boolean)
          .join(" ");
        return entryOf(m, label, SymbolKind.Object, detail || undefined);
      });
    } else if (f.name === "ensemble_scheduling") {
      kids = stepsIn(tree).map((s) => {
        const maps = (["input_map", "output_map"] as const).flatMap((map) =>
          s[map].map((e) => {
            const arrow = map === "input_map" ? "←" : "→";
            return entryOf(
              e.message,
              e.key?.token.value ?? "?",
              SymbolKind.Variable,
              `${map} ${arrow} ${e.value?.token.value ?? "?"}`,
              e.key,
            );
          }),
        );
        return entryOf(
          s.message,
          `step ${s.index + 1}: ${s.model?.token.value ?? "?"}`,
          SymbolKind.Function,
          "ensemble step",
          s.model,
          maps,
        );
      });
      kind = SymbolKind.Namespace;
    } else if (f.name === "dynamic_batching" || f.name === "sequence_batching") {
      kind = SymbolKind.Event;
      detail = "batching";
    } else if (!msgs.length) {
      const v = f.values.filter((x): x is LooseScalar => x.kind === "scalar").map((x) => x.token.value);
      detail = v.length > 1 ? `[${v.join(", ")}]` : v[0];
    }
    children.push({
      name: f.name,
      kind,
      ...(detail ? { detail } : {}),
      range: fieldRange(f),
      selectionRange: sel,
      ...(kids.length ? { children: kids } : {}),
    });
  }
  const model = nameOf?.token.value || folder || "model";
  return [
    {
      name: model,
      kind: SymbolKind.Module,
      ...(runs ? { detail: runs } : {}),
      range: range(0, text.length),
      selectionRange: nameOf ? range(inner(nameOf, text).start, inner(nameOf, text).end) : range(0, 0),
      children,
    },
  ];
}

/** A range for every `{ }`, `[ ]` and `< >` block over more than one line, and every run of comment lines. */
export function foldingRanges(text: string): FoldingRange[] {
  const doc = TextDocument.create("file:///fold", "pbtxt", 0, text);
  const lineOf = (offset: number): number => doc.positionAt(offset).line;
  const out: FoldingRange[] = [];
  const stack: number[] = [];
  const closing: Record<string, string> = { "}": "{", "]": "[", ">": "<" };
  const open: string[] = [];
  for (const t of looseTokens(text)) {
    if (t.type !== "punct") continue;
    if (t.value === "{" || t.value === "[" || t.value === "<") {
      stack.push(t.start);
      open.push(t.value);
    } else if (closing[t.value]) {
      if (open.at(-1) !== closing[t.value]) continue;
      open.pop();
      const start = lineOf(stack.pop()!);
      const end = lineOf(t.start);
      // The closing line stays visible when it is a line of its own.
      const last = end - 1 > start ? end - 1 : end;
      if (end > start) out.push({ startLine: start, endLine: last });
    }
  }
  const lines = text.split("\n");
  let runStart = -1;
  for (let k = 0; k <= lines.length; k++) {
    const isComment = k < lines.length && /^\s*#/.test(lines[k]!);
    if (isComment && runStart < 0) runStart = k;
    if (!isComment && runStart >= 0) {
      if (k - 1 > runStart) out.push({ startLine: runStart, endLine: k - 1, kind: FoldingRangeKind.Comment });
      runStart = -1;
    }
  }
  return out.sort((a, b) => a.startLine - b.startLine || b.endLine - a.endLine);
}
