import {
  CodeActionKind,
  type Connection,
  MessageType,
  ShowMessageNotification,
  TextDocumentSyncKind,
  TextDocuments,
  createConnection,
} from "vscode-languageserver/node";
import { TextDocument } from "vscode-languageserver-textdocument";
import type { Paths } from "../config/paths.js";
import { log as rootLog } from "../log/logger.js";
import type { LintOptions } from "../repo/lint.js";
import { type LspFramingError, framedInput } from "./framing.js";
import { listenForCodeActions } from "./handlers/code-actions.js";
import { listenForCompletion } from "./handlers/completion.js";
import { type HandlerContext, isConfigDoc } from "./handlers/context.js";
import { listenForDefinition } from "./handlers/definition.js";
import { listenForDocumentText } from "./handlers/document.js";
import { listenForHover } from "./handlers/hover.js";
import { guardUntilInitialized } from "./lifecycle.js";
import { modelSourceFor } from "./model-source.js";
import { ModelTensorReader } from "./model-tensors.js";
import { Navigation } from "./navigation.js";
import { DiagnosticsPublisher, toPath } from "./publish.js";
import { SEMANTIC_TOKENS_LEGEND } from "./semantic-tokens.js";
import { servedVerdictsByFile } from "./served-verdicts.js";
import {
  DEFAULT_SETTINGS,
  type GpuCount,
  type LintFacts,
  type LspSettings,
  lintOptionsOf,
  readSettings,
} from "./settings.js";
import { type RunVerdicts, VerdictWatch } from "./verdict.js";
import { Workspace, locateConfig } from "./workspace.js";

const log = rootLog.child("lsp");

export interface LspServerOptions {
  /** Where the server reads and writes LSP messages (stdio for `triton-dev lsp`). */
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
  /** The run's state folder, for the live server's verdict; undefined: no verdicts. */
  paths?: Paths;
  lint?: LintOptions;
  /** Watch repositories for changes made outside the editor (default on). */
  watch?: boolean;
  /** How often the run's state is read (ms). */
  verdictIntervalMs?: number;
  /** Settings before the editor sends any (`--disable-auto-complete-config`). */
  settings?: Partial<LspSettings>;
  /** This machine's GPUs, for the "auto" GPU setting (absent: unknown, no GPU check). */
  gpuCount?: GpuCount;
  /** The runtimes the `runtime` setting may name. */
  runtimeKinds?: readonly string[];
  /** What lint knows of each of them (runtimes/kinds.ts `lintFacts`). */
  lintFacts?: LintFacts;
  /** The most workspace symbols one query answers (default navigation.ts SYMBOL_CAP). */
  symbolCap?: number;
}

export interface LspServer {
  connection: Connection;
  /** Resolves when the client has asked the server to exit (or the stream closed). */
  closed: Promise<void>;
}

/**
 * `triton-dev lsp`: a Language Server for config.pbtxt. Diagnostics are lint's, on the editor's
 * unsaved text, with the files around it (ensembles, model files) as saved; completion, hover and
 * go-to-definition come from the ModelConfig schema and the repository's other models; a
 * running `triton-dev up` adds Triton's own verdict on the models it serves.
 *
 * This function wires the parts together and owns the server's life (initialize, settings,
 * open documents, shutdown); each request's answer is in `handlers/` (one file per feature),
 * what the editor is shown in `publish.ts`, the run's verdict in `served-verdicts.ts`.
 */
export function startLspServer(o: LspServerOptions): LspServer {
  // Framing errors end the server (see framing.ts): `closed` rejects with what was wrong.
  let fatal: (err: LspFramingError) => void = () => {};
  const { connection, initialized } = guardUntilInitialized(
    createConnection(
      framedInput(o.input, (err) => fatal(err)),
      o.output,
    ),
  );
  const documents = new TextDocuments(TextDocument);
  const publisher = new DiagnosticsPublisher(connection, documents);
  const workspace = new Workspace({
    ...(o.lint ? { lint: o.lint } : {}),
    watch: o.watch ?? true,
    publish: (file, ds) => publisher.setLint(file, ds),
  });
  const tensors = new ModelTensorReader();
  const navigation = new Navigation({ connection, documents, workspace, symbolCap: o.symbolCap });
  const ctx: HandlerContext = {
    connection,
    documents,
    workspace,
    navigation,
    sourceFor: (file) => modelSourceFor(file, workspace, documents, tensors),
    textOf: (file) => publisher.textOf(file),
    client: { snippets: false, renames: false },
  };

  // The live server's verdict.
  let lastVerdicts: RunVerdicts | undefined;
  const applyVerdicts = () => {
    const open = documents.all().flatMap((doc) => toPath(doc.uri) ?? []);
    publisher.setVerdicts(servedVerdictsByFile(lastVerdicts, workspace.repositories(), open, ctx.textOf));
  };
  const verdicts = o.paths
    ? new VerdictWatch({
        paths: o.paths,
        ...(o.verdictIntervalMs ? { intervalMs: o.verdictIntervalMs } : {}),
        onChange: (v) => {
          lastVerdicts = v;
          applyVerdicts();
        },
      })
    : undefined;

  const applySettings = settingsApplier(o, connection, workspace, () => lastVerdicts && applyVerdicts());
  connection.onDidChangeConfiguration((p) => applySettings(p.settings, false));

  connection.onInitialize(async (params) => {
    await applySettings(params.initializationOptions, true);
    ctx.client.snippets = params.capabilities.textDocument?.completion?.completionItem?.snippetSupport === true;
    ctx.client.renames = params.capabilities.workspace?.workspaceEdit?.resourceOperations?.includes("rename") === true;
    initialized();
    return {
      capabilities: {
        textDocumentSync: TextDocumentSyncKind.Incremental,
        completionProvider: { triggerCharacters: [":", '"', " ", "{"] },
        hoverProvider: true,
        definitionProvider: true,
        codeActionProvider: { codeActionKinds: [CodeActionKind.QuickFix] },
        documentFormattingProvider: true,
        semanticTokensProvider: { legend: SEMANTIC_TOKENS_LEGEND, full: true },
        ...navigation.initialize(params),
      },
      serverInfo: { name: "triton-dev" },
    };
  });
  connection.onInitialized(() => verdicts?.start());

  documents.onDidChangeContent((e) => {
    const p = isConfigDoc(e.document.uri);
    if (!p) return;
    void workspace
      .setBuffer(p, e.document.getText())
      .then(() => {
        // Each change of an open config is answered, clean or not: the editor then knows it was checked.
        if (documents.get(e.document.uri)) publisher.send(p);
        if (lastVerdicts) applyVerdicts();
      })
      .catch((err) => log.error("answering a change failed", { file: p, error: String(err) }));
  });
  documents.onDidClose((e) => {
    const p = isConfigDoc(e.document.uri);
    if (p)
      void workspace
        .setBuffer(p, undefined)
        .catch((err) => log.error("answering a close failed", { file: p, error: String(err) }));
  });

  listenForCompletion(ctx);
  listenForHover(ctx);
  listenForDefinition(ctx);
  listenForCodeActions(ctx);
  listenForDocumentText(ctx);

  const closing = serverEnd(connection, workspace, verdicts);
  fatal = closing.fatal;
  connection.onShutdown(() => closing.shutdown());
  connection.onExit(() => void closing.shutdown());
  connection.onDidChangeWatchedFiles((p) => {
    for (const c of p.changes) {
      const f = toPath(c.uri);
      const at = f ? locateConfig(f) : undefined;
      if (at) void workspace.changed(at.repo, at.model);
    }
  });
  navigation.listen();
  documents.listen(connection);
  connection.listen();
  return { connection, closed: closing.closed };
}

/**
 * The editor's settings: read at initialize and whenever they change; lint runs with what they
 * give, and the workspace is linted again only when that changes. A setting it cannot take is
 * shown to the user and logged.
 */
function settingsApplier(
  o: LspServerOptions,
  connection: Connection,
  workspace: Workspace,
  relinted: () => void,
): (raw: unknown, atStart: boolean) => Promise<void> {
  let settings: LspSettings = { ...DEFAULT_SETTINGS, ...o.settings };
  let lintKey = "";
  return async (raw, atStart) => {
    const r = readSettings(raw, settings, o.runtimeKinds ?? []);
    for (const p of r.problems) {
      log.warn(p);
      // A notification: the editor shows it, nothing waits for an answer.
      void connection.sendNotification(ShowMessageNotification.type, { type: MessageType.Warning, message: p });
    }
    settings = r.settings;
    const lint = { ...o.lint, ...(await lintOptionsOf(settings, o.gpuCount, o.lintFacts)) };
    const key = JSON.stringify(lint);
    if (key === lintKey) return;
    lintKey = key;
    if (atStart) await workspace.setLint(lint);
    else
      void workspace
        .setLint(lint)
        .then(relinted)
        .catch((err) => log.error("applying settings failed", { error: String(err) }));
  };
}

/**
 * How the server ends: `shutdown`/`exit` from the editor resolve `closed` once the workspace's
 * watches are closed; input that cannot be read (`fatal`) rejects it with why.
 */
function serverEnd(
  connection: Connection,
  workspace: Workspace,
  verdicts: VerdictWatch | undefined,
): { closed: Promise<void>; fatal: (err: LspFramingError) => void; shutdown: () => Promise<void> } {
  let resolveClosed: () => void = () => {};
  let rejectClosed: (err: unknown) => void = () => {};
  const closed = new Promise<void>((resolve, reject) => {
    resolveClosed = resolve;
    rejectClosed = reject;
  });
  const fatal = (err: LspFramingError) => {
    log.debug("stopping: the editor's input cannot be read", { error: err.message });
    verdicts?.stop();
    void workspace
      .close()
      .catch(() => undefined)
      .then(() => {
        connection.dispose();
        rejectClosed(err);
      });
  };
  const shutdown = async () => {
    verdicts?.stop();
    await workspace.close().catch((err) => log.warn("closing the workspace failed", { error: String(err) }));
    resolveClosed();
  };
  return { closed, fatal, shutdown };
}
