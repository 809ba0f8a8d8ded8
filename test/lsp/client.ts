import { type ChildProcess, spawn } from "node:child_process";
import { PassThrough } from "node:stream";
import { pathToFileURL } from "node:url";
import {
  type CodeAction,
  type CompletionItem,
  type CompletionList,
  type Diagnostic,
  type Hover,
  type Location,
  type ProtocolConnection,
  type TextEdit,
  StreamMessageReader,
  StreamMessageWriter,
  createProtocolConnection,
} from "vscode-languageserver-protocol/node";
import { type LspServerOptions, startLspServer } from "../../src/lsp/server.js";

/**
 * A Language Server Protocol client as an editor is one: vscode-languageserver-protocol's own
 * connection, speaking JSON-RPC over streams to the server (a child's stdio, or an in-process
 * server's streams), keeping the diagnostics each file was last published with.
 */
export class LspClient {
  readonly diagnostics = new Map<string, Diagnostic[]>();
  private readonly versions = new Map<string, number>();
  private readonly texts = new Map<string, string>();
  private waiters: Array<() => void> = [];
  /** Every publishDiagnostics, in order (uri, count). */
  readonly published: Array<{ uri: string; count: number; at: number; version?: number }> = [];

  constructor(
    readonly connection: ProtocolConnection,
    readonly child?: ChildProcess,
  ) {
    connection.onNotification(
      "textDocument/publishDiagnostics",
      (p: { uri: string; version?: number; diagnostics: Diagnostic[] }) => {
        this.diagnostics.set(p.uri, p.diagnostics);
        this.published.push({
          uri: p.uri,
          count: p.diagnostics.length,
          at: performance.now(),
          ...(p.version !== undefined ? { version: p.version } : {}),
        });
        for (const w of this.waiters.splice(0)) w();
      },
    );
    connection.onRequest("workspace/configuration", () => []);
    connection.onRequest("client/registerCapability", () => null);
    connection.listen();
  }

  /** The server as `triton-dev lsp` over a child's stdio. */
  static spawn(command: string, args: string[], env: NodeJS.ProcessEnv): LspClient {
    const child = spawn(command, args, { env, stdio: ["pipe", "pipe", "pipe"] });
    child.stderr!.on("data", () => {});
    const conn = createProtocolConnection(
      new StreamMessageReader(child.stdout!),
      new StreamMessageWriter(child.stdin!),
    );
    return new LspClient(conn, child);
  }

  /** The server in this process, over a pair of streams. */
  static inProcess(o: Omit<LspServerOptions, "input" | "output">): LspClient {
    const toServer = new PassThrough();
    const toClient = new PassThrough();
    startLspServer({ ...o, input: toServer, output: toClient });
    const conn = createProtocolConnection(new StreamMessageReader(toClient), new StreamMessageWriter(toServer));
    return new LspClient(conn);
  }

  async initialize(rootDir: string, o: { snippets?: boolean; renames?: boolean } = {}): Promise<void> {
    await this.connection.sendRequest("initialize", {
      processId: process.pid,
      rootUri: pathToFileURL(rootDir).href,
      workspaceFolders: [{ uri: pathToFileURL(rootDir).href, name: "models" }],
      capabilities: {
        textDocument: {
          completion: { completionItem: { snippetSupport: o.snippets ?? false } },
          publishDiagnostics: {},
        },
        workspace: { workspaceEdit: { resourceOperations: o.renames ? ["rename"] : [], documentChanges: true } },
      },
    });
    await this.connection.sendNotification("initialized", {});
  }

  uri(file: string): string {
    return pathToFileURL(file).href;
  }

  async open(file: string, text: string): Promise<void> {
    this.versions.set(file, 1);
    this.texts.set(file, text);
    await this.connection.sendNotification("textDocument/didOpen", {
      textDocument: { uri: this.uri(file), languageId: "pbtxt", version: 1, text },
    });
  }

  /** Replaces the whole text (as a full change). */
  async change(file: string, text: string): Promise<void> {
    const v = (this.versions.get(file) ?? 1) + 1;
    this.versions.set(file, v);
    this.texts.set(file, text);
    await this.connection.sendNotification("textDocument/didChange", {
      textDocument: { uri: this.uri(file), version: v },
      contentChanges: [{ text }],
    });
  }

  /** Types `chars` at the end of the document one character at a time, as incremental changes. */
  async typeAtEnd(file: string, chars: string, after?: (text: string) => Promise<void>): Promise<void> {
    for (const c of chars) {
      const text = this.texts.get(file) ?? "";
      const lines = text.split("\n");
      const pos = { line: lines.length - 1, character: lines.at(-1)!.length };
      const v = (this.versions.get(file) ?? 1) + 1;
      this.versions.set(file, v);
      this.texts.set(file, text + c);
      await this.connection.sendNotification("textDocument/didChange", {
        textDocument: { uri: this.uri(file), version: v },
        contentChanges: [{ range: { start: pos, end: pos }, text: c }],
      });
      if (after) await after(text + c);
    }
  }

  textOf(file: string): string | undefined {
    return this.texts.get(file);
  }

  async close(file: string): Promise<void> {
    await this.connection.sendNotification("textDocument/didClose", { textDocument: { uri: this.uri(file) } });
  }

  /** Waits until the file's diagnostics satisfy `pred`; rejects after `timeoutMs` with what they were. */
  async waitForDiagnostics(
    file: string,
    pred: (ds: Diagnostic[]) => boolean,
    timeoutMs = 15_000,
  ): Promise<Diagnostic[]> {
    const uri = this.uri(file);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const ds = this.diagnostics.get(uri);
      if (ds && pred(ds)) return ds;
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(
          `diagnostics of ${file} did not come within ${timeoutMs} ms; last: ${JSON.stringify(ds?.map((d) => [d.code, d.message]) ?? "none")}`,
        );
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.min(left, 200));
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  /** The items of a completion answer (a list or a CompletionList). */
  async completion(file: string, line: number, character: number): Promise<CompletionItem[]> {
    const r = await this.completionList(file, line, character);
    return r.items;
  }

  async completionList(file: string, line: number, character: number): Promise<CompletionList> {
    const r = (await this.connection.sendRequest("textDocument/completion", {
      textDocument: { uri: this.uri(file) },
      position: { line, character },
    })) as CompletionItem[] | CompletionList | null;
    return Array.isArray(r) ? { isIncomplete: false, items: r } : (r ?? { isIncomplete: false, items: [] });
  }

  hover(file: string, line: number, character: number): Promise<Hover | null> {
    return this.connection.sendRequest("textDocument/hover", {
      textDocument: { uri: this.uri(file) },
      position: { line, character },
    }) as Promise<Hover | null>;
  }

  definition(file: string, line: number, character: number): Promise<Location | null> {
    return this.connection.sendRequest("textDocument/definition", {
      textDocument: { uri: this.uri(file) },
      position: { line, character },
    }) as Promise<Location | null>;
  }

  codeActions(file: string, diagnostics: Diagnostic[]): Promise<CodeAction[]> {
    const range = diagnostics[0]!.range;
    return this.connection.sendRequest("textDocument/codeAction", {
      textDocument: { uri: this.uri(file) },
      range,
      context: { diagnostics },
    }) as Promise<CodeAction[]>;
  }

  format(file: string): Promise<TextEdit[]> {
    return this.connection.sendRequest("textDocument/formatting", {
      textDocument: { uri: this.uri(file) },
      options: { tabSize: 2, insertSpaces: true },
    }) as Promise<TextEdit[]>;
  }

  /** shutdown, exit, and the child's end when there is one. */
  async stop(): Promise<number | null> {
    try {
      await Promise.race([this.connection.sendRequest("shutdown"), new Promise((r) => setTimeout(r, 5_000))]);
      // The library ends the server's process on `exit`: an in-process server is only shut down.
      if (this.child) await this.connection.sendNotification("exit");
    } catch {
      // The server is already gone.
    }
    const child = this.child;
    if (!child) {
      this.connection.dispose();
      return 0;
    }
    if (child.exitCode !== null) return child.exitCode;
    const code = await Promise.race([
      new Promise<number | null>((r) => child.once("exit", (c) => r(c))),
      new Promise<"late">((r) => setTimeout(() => r("late"), 5_000)),
    ]);
    this.connection.dispose();
    if (code === "late") {
      child.kill("SIGKILL");
      throw new Error("the server did not exit within 5 s of `exit`");
    }
    return code;
  }
}

/**
 * A diagnostic's message as text: LSP 3.18 lets a message be MarkupContent, which triton-dev's
 * server never sends (its messages are plain strings); its value is the text either way.
 */
export function messageText(d: Diagnostic): string {
  return typeof d.message === "string" ? d.message : d.message.value;
}

/** A (line, character) position of `needle`'s `nth` occurrence in `text`, plus `delta` characters. */
export function positionOf(text: string, needle: string, delta = 0, nth = 0): { line: number; character: number } {
  let at = -1;
  for (let k = 0; k <= nth; k++) at = text.indexOf(needle, at + 1);
  if (at < 0) throw new Error(`'${needle}' not in the text`);
  const before = text.slice(0, at + delta);
  const line = before.split("\n").length - 1;
  return { line, character: before.length - before.lastIndexOf("\n") - 1 };
}

/** `text` with LSP text edits applied (non-overlapping, as a server sends them), last first. */
export function applyEdits(
  text: string,
  edits: Array<{
    range: { start: { line: number; character: number }; end: { line: number; character: number } };
    newText: string;
  }>,
): string {
  const lineStarts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === "\n") lineStarts.push(i + 1);
  const at = (p: { line: number; character: number }) =>
    p.line >= lineStarts.length ? text.length : Math.min(text.length, lineStarts[p.line]! + p.character);
  const sorted = [...edits].sort((a, b) => at(b.range.start) - at(a.range.start));
  let out = text;
  for (const e of sorted) out = out.slice(0, at(e.range.start)) + e.newText + out.slice(at(e.range.end));
  return out;
}
