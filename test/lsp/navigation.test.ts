import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import type {
  DocumentSymbol,
  FoldingRange,
  Hover,
  Location,
  Range,
  SymbolInformation,
  TextEdit,
  WorkspaceEdit,
} from "vscode-languageserver-protocol";
import { pythonConfig, pythonModel, removeTempRepos, tempRepo, writeFiles } from "../repo/helpers.js";
import { LspClient, positionOf } from "./client.js";
import { PIPE } from "./fixtures.js";
import { SYMBOL_CAP } from "../../src/lsp/navigation.js";

// Navigation against the server in this process, driven by the protocol library's own client:
// tensor hover and definitions, references, rename, the outline, folding and workspace symbols
// across a repository of a python model and two ensembles that run it.

// Two steps through an internal tensor MID.
const TWICE = `# echo twice
# through MID
name: "twice"
platform: "ensemble"
max_batch_size: 8
input [
  {
    name: "X"
    data_type: TYPE_FP32
    dims: [ -1 ]
  }
]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]
ensemble_scheduling {
  step [
    {
      model_name: "echo"
      model_version: -1
      input_map { key: "INPUT0" value: "X" }
      output_map { key: "OUTPUT0" value: "MID" }
    },
    {
      model_name: "echo"
      model_version: -1
      input_map { key: "INPUT0" value: "MID" }
      output_map { key: "OUTPUT0" value: "Y" }
    }
  ]
}
`;

const ECHO = pythonConfig("echo");
const ECHO_INPUT_LIST = 'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]';

let repo: string;
let client: LspClient;
const file = (model: string) => path.join(repo, model, "config.pbtxt");

beforeEach(async () => {
  repo = await tempRepo();
  await writeFiles(repo, {
    ...pythonModel("echo"),
    ...pythonModel("other"),
    "pipe/config.pbtxt": PIPE,
    "pipe/1/": "",
    "twice/config.pbtxt": TWICE,
    "twice/1/": "",
  });
  client = LspClient.inProcess({ watch: false, lint: { autoComplete: true } });
  await client.initialize(repo, { renames: true });
});
afterEach(async () => {
  await client.stop();
});
afterAll(removeTempRepos);

const request = <T>(method: string, f: string, p: { line: number; character: number }, more: object = {}) =>
  client.connection.sendRequest(method, {
    textDocument: { uri: client.uri(f) },
    position: p,
    ...more,
  }) as Promise<T>;

/** `file:line:col-col` of each location, relative to the repository, sorted. */
const where = (locs: Location[]) =>
  locs
    .map(
      (l) =>
        `${path.relative(repo, new URL(l.uri).pathname)}:${l.range.start.line}:${l.range.start.character}-${l.range.end.character}`,
    )
    .sort();

const spanOf = (text: string, needle: string, nth = 0): Range => ({
  start: positionOf(text, needle, 0, nth),
  end: positionOf(text, needle, needle.length, nth),
});

/** Applies LSP text edits to a text (from the end, so earlier offsets stay valid). */
function applyEdits(text: string, edits: TextEdit[]): string {
  const offset = (p: { line: number; character: number }) => {
    const lines = text.split("\n");
    return lines.slice(0, p.line).reduce((n, l) => n + l.length + 1, 0) + p.character;
  };
  return [...edits]
    .sort((a, b) => offset(b.range.start) - offset(a.range.start))
    .reduce((t, e) => t.slice(0, offset(e.range.start)) + e.newText + t.slice(offset(e.range.end)), text);
}

describe("initialize", () => {
  it("advertises every navigation feature", async () => {
    const c = LspClient.inProcess({ watch: false });
    try {
      const r = (await c.connection.sendRequest("initialize", {
        processId: process.pid,
        rootUri: client.uri(repo),
        capabilities: {},
      })) as { capabilities: Record<string, unknown> };
      expect(r.capabilities).toMatchObject({
        hoverProvider: true,
        definitionProvider: true,
        referencesProvider: true,
        renameProvider: { prepareProvider: true },
        documentSymbolProvider: true,
        foldingRangeProvider: true,
        workspaceSymbolProvider: true,
      });
    } finally {
      await c.stop();
    }
  });
});

describe("hover on a tensor", () => {
  it("a step model's input: its type, dims and every ensemble step that feeds it", async () => {
    await client.open(file("echo"), ECHO);
    const h = await request<Hover>("textDocument/hover", file("echo"), positionOf(ECHO, "INPUT0", 2));
    const md = (h.contents as { value: string }).value;
    expect(md.split("\n")[0]).toBe("**INPUT0**: input of `echo`, `TYPE_FP32` `[-1]`");
    expect(md).toContain("- `pipe` step 1 runs `echo`: input_map `INPUT0` ← `IN`");
    expect(md).toContain("- `twice` step 1 runs `echo`: input_map `INPUT0` ← `X`");
    expect(md).toContain("- `twice` step 2 runs `echo`: input_map `INPUT0` ← `MID`");
    expect(h.range).toEqual(spanOf(ECHO, "INPUT0"));
  });

  it("in an ensemble: a map key is the step model's tensor, a value the ensemble's own", async () => {
    await client.open(file("twice"), TWICE);
    let h = await request<Hover>("textDocument/hover", file("twice"), positionOf(TWICE, '"OUTPUT0"', 2));
    let md = (h.contents as { value: string }).value;
    expect(md.split("\n")[0]).toBe("**OUTPUT0**: output of `echo`, `TYPE_FP32` `[-1]`");
    expect(md).toContain("- `pipe` step 1 runs `echo`: output_map `OUTPUT0` → `OUT`");
    // The internal tensor: its type from the step output that writes it, and both steps.
    h = await request<Hover>("textDocument/hover", file("twice"), positionOf(TWICE, 'value: "MID"', 9));
    md = (h.contents as { value: string }).value;
    expect(md.split("\n")[0]).toBe("**MID**: passed between the steps of ensemble `twice`, `TYPE_FP32` `[-1]`");
    expect(md).toContain("- `twice` step 1 runs `echo`: output_map `OUTPUT0` → `MID`");
    expect(md).toContain("- `twice` step 2 runs `echo`: input_map `INPUT0` ← `MID`");
    // The ensemble's input, on its declaration.
    h = await request<Hover>("textDocument/hover", file("twice"), positionOf(TWICE, 'name: "X"', 7));
    md = (h.contents as { value: string }).value;
    expect(md.split("\n")[0]).toBe("**X**: input of `twice`, `TYPE_FP32` `[-1]`");
    expect(md).toContain("- `twice` step 1 runs `echo`: input_map `INPUT0` ← `X`");
  });
});

describe("definition of a tensor", () => {
  it("a tensor passed between steps: where a step writes it and the step model's output declaration", async () => {
    await client.open(file("twice"), TWICE);
    const locs = await request<Location[]>("textDocument/definition", file("twice"), positionOf(TWICE, '"MID"', 2, 1));
    expect(where(locs)).toEqual(
      where([
        { uri: client.uri(file("twice")), range: spanOf(TWICE, '"MID"') },
        { uri: client.uri(file("echo")), range: spanOf(ECHO, '"OUTPUT0"') },
      ]),
    );
  });
});

describe("references", () => {
  it("a model: its own name and every ensemble step that runs it", async () => {
    await client.open(file("pipe"), PIPE);
    const p = positionOf(PIPE, '"echo"', 2);
    const all = await request<Location[]>("textDocument/references", file("pipe"), p, {
      context: { includeDeclaration: true },
    });
    expect(where(all)).toEqual([
      "echo/config.pbtxt:0:7-11",
      "pipe/config.pbtxt:8:19-23",
      "twice/config.pbtxt:16:19-23",
      "twice/config.pbtxt:22:19-23",
    ]);
    const uses = await request<Location[]>("textDocument/references", file("pipe"), p, {
      context: { includeDeclaration: false },
    });
    expect(uses).toHaveLength(3);
  });

  it("an ensemble saved elsewhere after a first answer is found by the next one", async () => {
    await client.open(file("pipe"), PIPE);
    const p = positionOf(PIPE, '"echo"', 2);
    const refs = () =>
      request<Location[]>("textDocument/references", file("pipe"), p, { context: { includeDeclaration: true } });
    expect(await refs()).toHaveLength(4);
    await writeFiles(repo, { "pipe2/config.pbtxt": PIPE.replace('"pipe"', '"pipe2"'), "pipe2/1/": "" });
    await client.connection.sendNotification("workspace/didChangeWatchedFiles", {
      changes: [{ uri: client.uri(file("pipe2")), type: 1 }],
    });
    await expect.poll(async () => where(await refs()), { timeout: 15_000 }).toContain("pipe2/config.pbtxt:8:19-23");
  });

  it("a tensor: its declaration and every ensemble map that names it", async () => {
    await client.open(file("echo"), ECHO);
    const locs = await request<Location[]>("textDocument/references", file("echo"), positionOf(ECHO, "OUTPUT0", 1), {
      context: { includeDeclaration: true },
    });
    expect(where(locs)).toEqual([
      "echo/config.pbtxt:4:18-25",
      "pipe/config.pbtxt:11:25-32",
      "twice/config.pbtxt:19:25-32",
      "twice/config.pbtxt:25:25-32",
    ]);
    // An ensemble's input: its declaration and the map values that read it.
    await client.open(file("pipe"), PIPE);
    const own = await request<Location[]>("textDocument/references", file("pipe"), positionOf(PIPE, '"IN"', 1), {
      context: { includeDeclaration: true },
    });
    expect(where(own)).toEqual(["pipe/config.pbtxt:10:40-42", "pipe/config.pbtxt:3:17-19"]);
  });
});

describe("rename", () => {
  it("a tensor: its declaration and every ensemble map that names it, in one edit", async () => {
    await client.open(file("pipe"), PIPE);
    const p = positionOf(PIPE, '"INPUT0"', 3);
    const prep = await request<{ range: Range; placeholder: string }>("textDocument/prepareRename", file("pipe"), p);
    expect(prep).toEqual({ range: spanOf(PIPE, "INPUT0"), placeholder: "INPUT0" });
    const edit = await request<WorkspaceEdit>("textDocument/rename", file("pipe"), p, { newName: "TOKENS" });
    const changes = edit.documentChanges as Array<{
      textDocument: { uri: string; version: number | null };
      edits: TextEdit[];
    }>;
    const byFile = Object.fromEntries(
      changes.map((c) => [path.relative(repo, new URL(c.textDocument.uri).pathname), c]),
    );
    expect(Object.keys(byFile).sort()).toEqual(["echo/config.pbtxt", "pipe/config.pbtxt", "twice/config.pbtxt"]);
    expect(byFile["pipe/config.pbtxt"]!.textDocument.version).toBe(1); // open: the editor's version
    expect(byFile["echo/config.pbtxt"]!.textDocument.version).toBeNull();
    expect(applyEdits(ECHO, byFile["echo/config.pbtxt"]!.edits)).toBe(ECHO.replace('"INPUT0"', '"TOKENS"'));
    expect(applyEdits(TWICE, byFile["twice/config.pbtxt"]!.edits)).toBe(
      TWICE.replaceAll('key: "INPUT0"', 'key: "TOKENS"'),
    );
    // Applied and saved, the repository is as clean as before.
    await fsp.writeFile(file("echo"), applyEdits(ECHO, byFile["echo/config.pbtxt"]!.edits));
    await fsp.writeFile(file("twice"), applyEdits(TWICE, byFile["twice/config.pbtxt"]!.edits));
    await client.change(file("pipe"), applyEdits(PIPE, byFile["pipe/config.pbtxt"]!.edits));
    await client.waitForDiagnostics(file("pipe"), (d) => d.length === 0);
  });

  it("an ensemble's internal tensor stays inside that ensemble", async () => {
    await client.open(file("twice"), TWICE);
    const edit = await request<WorkspaceEdit>("textDocument/rename", file("twice"), positionOf(TWICE, '"MID"', 2), {
      newName: "HIDDEN",
    });
    const changes = edit.documentChanges as Array<{ textDocument: { uri: string }; edits: TextEdit[] }>;
    expect(changes).toHaveLength(1);
    expect(applyEdits(TWICE, changes[0]!.edits)).toBe(TWICE.replaceAll('"MID"', '"HIDDEN"'));
  });

  it("a model: its name, every step that runs it, and the folder move where the editor can rename files", async () => {
    await client.open(file("pipe"), PIPE);
    const p = positionOf(PIPE, '"echo"', 2);
    const edit = await request<WorkspaceEdit>("textDocument/rename", file("pipe"), p, { newName: "echo2" });
    const changes = edit.documentChanges!;
    // The text edits first, then the folder: after the move the config's old address is gone.
    expect(changes.at(-1)).toEqual({
      kind: "rename",
      oldUri: client.uri(path.join(repo, "echo")),
      newUri: client.uri(path.join(repo, "echo2")),
    });
    const texts = changes.slice(0, -1) as Array<{ textDocument: { uri: string }; edits: TextEdit[] }>;
    const byFile = Object.fromEntries(
      texts.map((c) => [path.relative(repo, new URL(c.textDocument.uri).pathname), c.edits]),
    );
    expect(applyEdits(ECHO, byFile["echo/config.pbtxt"]!)).toBe(pythonConfig("echo2"));
    expect(applyEdits(PIPE, byFile["pipe/config.pbtxt"]!)).toBe(PIPE.replace('"echo"', '"echo2"'));
    expect(byFile["twice/config.pbtxt"]).toHaveLength(2);

    // A name Triton cannot serve, or one taken, is refused with the reason.
    await expect(request("textDocument/rename", file("pipe"), p, { newName: "my model" })).rejects.toThrow(
      /'my model' cannot be a model name: it has a space/,
    );
    await expect(request("textDocument/rename", file("pipe"), p, { newName: "other" })).rejects.toThrow(
      /a model 'other' is already in/,
    );
  });

  it("an editor that cannot rename files gets the edits and a message naming the folder to move", async () => {
    const plain = LspClient.inProcess({ watch: false });
    const messages: string[] = [];
    plain.connection.onNotification("window/showMessage", (m: { message: string }) => void messages.push(m.message));
    try {
      await plain.connection.sendRequest("initialize", {
        processId: process.pid,
        rootUri: plain.uri(repo),
        capabilities: {},
      });
      await plain.connection.sendNotification("initialized", {});
      await plain.open(file("echo"), ECHO);
      const edit = (await plain.connection.sendRequest("textDocument/rename", {
        textDocument: { uri: plain.uri(file("echo")) },
        position: positionOf(ECHO, "echo", 1),
        newName: "echo2",
      })) as WorkspaceEdit;
      expect(edit.documentChanges).toBeUndefined();
      expect(
        Object.keys(edit.changes!)
          .map((u) => path.relative(repo, new URL(u).pathname))
          .sort(),
      ).toEqual(["echo/config.pbtxt", "pipe/config.pbtxt", "twice/config.pbtxt"]);
      await expect.poll(() => messages).toHaveLength(1);
      expect(messages[0]).toMatch(/move the folder .*\/echo to .*\/echo2 yourself/);
    } finally {
      await plain.stop();
    }
  });
});

describe("rename refusals and old clients", () => {
  it("a tensor name its model or ensemble already has is refused", async () => {
    await client.open(file("twice"), TWICE);
    await expect(
      request("textDocument/rename", file("twice"), positionOf(TWICE, '"MID"', 2), { newName: "Y" }),
    ).rejects.toThrow(/'Y' already names a tensor of ensemble 'twice'/);
    await client.open(file("echo"), ECHO);
    await client.change(
      file("echo"),
      ECHO.replace(
        ECHO_INPUT_LIST,
        `${ECHO_INPUT_LIST.slice(0, -2)}, { name: "B" data_type: TYPE_FP32 dims: [ -1 ] } ]`,
      ),
    );
    await expect(
      request("textDocument/rename", file("echo"), positionOf(ECHO, "INPUT0", 1), { newName: "B" }),
    ).rejects.toThrow(/'B' is already an input of 'echo'/);
  });

  it("Neovim before 0.9, which fails on a folder rename, gets the edits and the message instead", async () => {
    const nvim = LspClient.inProcess({ watch: false });
    const messages: string[] = [];
    nvim.connection.onNotification("window/showMessage", (m: { message: string }) => void messages.push(m.message));
    try {
      await nvim.connection.sendRequest("initialize", {
        processId: process.pid,
        rootUri: nvim.uri(repo),
        clientInfo: { name: "Neovim", version: "0.7.2" },
        capabilities: {
          workspace: { workspaceEdit: { documentChanges: true, resourceOperations: ["rename", "create", "delete"] } },
        },
      });
      await nvim.connection.sendNotification("initialized", {});
      await nvim.open(file("echo"), ECHO);
      const edit = (await nvim.connection.sendRequest("textDocument/rename", {
        textDocument: { uri: nvim.uri(file("echo")) },
        position: positionOf(ECHO, "echo", 1),
        newName: "echo2",
      })) as WorkspaceEdit;
      expect(edit.documentChanges!.map((c) => ("kind" in c ? c.kind : "edit"))).toEqual(["edit", "edit", "edit"]);
      await expect.poll(() => messages).toHaveLength(1);
    } finally {
      await nvim.stop();
    }
  });
});

describe("outline and folding", () => {
  it("document symbols: the model, its tensors, instance groups, batching and ensemble steps", async () => {
    const text = `${ECHO}instance_group [ { count: 2 kind: KIND_CPU } ]\ndynamic_batching {\n  max_queue_delay_microseconds: 100\n}\n`;
    await client.open(file("echo"), text);
    const [root] = (await client.connection.sendRequest("textDocument/documentSymbol", {
      textDocument: { uri: client.uri(file("echo")) },
    })) as DocumentSymbol[];
    expect(root).toMatchObject({ name: "echo", detail: "python", selectionRange: spanOf(text, "echo") });
    const kids = root!.children!;
    expect(kids.map((k) => k.name)).toEqual([
      "name",
      "backend",
      "max_batch_size",
      "input",
      "output",
      "instance_group",
      "dynamic_batching",
    ]);
    expect(kids[3]!.children!.map((c) => [c.name, c.detail])).toEqual([["INPUT0", "TYPE_FP32 [-1]"]]);
    expect(kids[5]!.children!.map((c) => [c.name, c.detail])).toEqual([["group 1", "count 2 KIND_CPU"]]);
    expect(kids[6]!.range).toEqual({ start: { line: 6, character: 0 }, end: { line: 8, character: 1 } });

    await client.open(file("twice"), TWICE);
    const [ens] = (await client.connection.sendRequest("textDocument/documentSymbol", {
      textDocument: { uri: client.uri(file("twice")) },
    })) as DocumentSymbol[];
    expect(ens!.detail).toBe("ensemble");
    const steps = ens!.children!.find((c) => c.name === "ensemble_scheduling")!.children!;
    expect(steps.map((s) => s.name)).toEqual(["step 1: echo", "step 2: echo"]);
    expect(steps[1]!.children!.map((c) => `${c.name} ${c.detail}`)).toEqual([
      "INPUT0 input_map ← MID",
      "OUTPUT0 output_map → Y",
    ]);
  });

  it("folding: every block over more than one line, and comment runs", async () => {
    await client.open(file("twice"), TWICE);
    const ranges = (await client.connection.sendRequest("textDocument/foldingRange", {
      textDocument: { uri: client.uri(file("twice")) },
    })) as FoldingRange[];
    const line = (s: string, nth = 0) => positionOf(TWICE, s, 0, nth).line;
    expect(ranges).toContainEqual({ startLine: 0, endLine: 1, kind: "comment" });
    expect(ranges).toContainEqual({ startLine: line("input ["), endLine: line("output [") - 2 });
    expect(ranges).toContainEqual({ startLine: line("  {"), endLine: line("  }") - 1 });
    expect(ranges).toContainEqual({ startLine: line("ensemble_scheduling {"), endLine: TWICE.split("\n").length - 3 });
    // The one-line output list folds nothing.
    expect(ranges.some((r) => r.startLine === line("output ["))).toBe(false);
  });
});

describe("workspace symbols", () => {
  it("models and their tensors across the repository, filtered by the query", async () => {
    await client.open(file("pipe"), PIPE);
    await client.connection.sendRequest("textDocument/references", {
      textDocument: { uri: client.uri(file("pipe")) },
      position: positionOf(PIPE, '"echo"', 2),
      context: { includeDeclaration: true },
    }); // waits for the repository to be read whole
    const find = async (query: string) =>
      (await client.connection.sendRequest("workspace/symbol", { query })) as SymbolInformation[];
    const echo = await find("ECHO");
    expect(echo.map((s) => s.name)).toEqual(["echo"]);
    expect(where(echo.map((s) => s.location))).toEqual(["echo/config.pbtxt:0:7-11"]);
    const out = await find("out");
    expect(out.map((s) => `${s.containerName}:${s.name}`)).toEqual([
      "echo output:OUTPUT0",
      "other output:OUTPUT0",
      "pipe output:OUT",
    ]);
  });

  it("a repository of more models than its cap answers at most the cap's symbols (README's 100 by default)", async () => {
    expect(SYMBOL_CAP).toBe(100);
    // The cap taken smaller, as the server's option: 30 models against a cap of 10 is the walk
    // 300 models against 100 would be, a tenth of the repository to lint.
    await client.stop();
    client = LspClient.inProcess({ watch: false, lint: { autoComplete: true }, symbolCap: 10 });
    await client.initialize(repo, { renames: true });
    const files: Record<string, string> = {};
    for (let k = 0; k < 30; k++) Object.assign(files, pythonModel(`m${String(k).padStart(4, "0")}`));
    await writeFiles(repo, files);
    await client.open(file("echo"), ECHO);
    await client.connection.sendRequest("textDocument/references", {
      textDocument: { uri: client.uri(file("echo")) },
      position: positionOf(ECHO, "echo", 1),
      context: { includeDeclaration: true },
    });
    const all = (await client.connection.sendRequest("workspace/symbol", { query: "m" })) as SymbolInformation[];
    expect(all).toHaveLength(10);
    const one = (await client.connection.sendRequest("workspace/symbol", { query: "m0029" })) as SymbolInformation[];
    expect(one.map((s) => s.name)).toEqual(["m0029"]);
  });
});
