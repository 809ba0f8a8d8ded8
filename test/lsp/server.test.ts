import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { ECHO_ONNX, pythonConfig, pythonModel, removeTempRepos, tempRepo, writeFiles } from "../repo/helpers.js";
import { LspClient, applyEdits, messageText, positionOf } from "./client.js";
import { PIPE } from "./fixtures.js";

// The server in this process, driven by the protocol library's own client over streams; the
// same over a real child's stdio is lsp.integration.test.ts.

const ONNX_CONFIG = `name: "onnx_echo"
backend: "onnxruntime"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
`;

const ECHO_IO_LINES = `input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n`;

let repo: string;
let client: LspClient;
const file = (model: string) => path.join(repo, model, "config.pbtxt");
const codes = (ds: Array<{ code?: string | number }>) => ds.map((d) => d.code);

beforeEach(async () => {
  repo = await tempRepo();
  await writeFiles(repo, {
    ...pythonModel("echo"),
    "pipe/config.pbtxt": PIPE,
    "pipe/1/": "",
    "onnx_echo/config.pbtxt": ONNX_CONFIG,
    "onnx_echo/1/model.onnx": ECHO_ONNX,
  });
  client = LspClient.inProcess({ watch: false, lint: { autoComplete: true } });
  await client.initialize(repo, { snippets: false });
});
afterEach(async () => {
  await client.stop();
});
afterAll(removeTempRepos);

describe("diagnostics as you type", () => {
  it("a config typed character by character: errors appear where lint places them, and clear when it is fixed", async () => {
    const f = file("echo");
    const good = pythonConfig("echo");
    await client.open(f, good);
    await client.waitForDiagnostics(f, (ds) => ds.length === 0);

    // Half-typed: a field name with nothing after it yet.
    await client.typeAtEnd(f, "dynamic_batchng");
    // Each keystroke is answered by the newest text's findings (a burst may be answered once).
    let ds = await client.waitForDiagnostics(f, (d) => d.some((x) => /'dynamic_batchng'/.test(messageText(x))));
    expect(codes(ds)).toEqual(["config-syntax"]);
    expect(ds[0]!.message).toMatch(/^expected a value for 'dynamic_batchng', found end of file/);
    expect(client.published.filter((p) => p.uri === client.uri(f) && p.count > 0).length).toBeGreaterThan(0);

    await client.typeAtEnd(f, " {");
    ds = await client.waitForDiagnostics(f, (d) => d.some((x) => /never closed/.test(messageText(x))));
    expect(ds[0]!.range.start).toEqual(positionOf(client.textOf(f)!, "dynamic_batchng {", 16));

    await client.typeAtEnd(f, " }");
    ds = await client.waitForDiagnostics(f, (d) => codes(d).includes("config-unknown-field"));
    expect(ds[0]!.message).toMatch(
      /unknown field 'dynamic_batchng' in ModelConfig\nhint: Did you mean 'dynamic_batching'\?/,
    );
    expect(ds[0]!.range).toEqual({
      start: positionOf(client.textOf(f)!, "dynamic_batchng"),
      end: positionOf(client.textOf(f)!, "dynamic_batchng", "dynamic_batchng".length),
    });
    // Nothing was saved: the file on disk is as it was.
    expect(await fsp.readFile(f, "utf8")).toBe(good);

    // The quick fix names the field lint suggests; applied, the config is clean.
    const [fix] = await client.codeActions(f, ds);
    expect(fix!.title).toBe("Change 'dynamic_batchng' to 'dynamic_batching'");
    const edit = fix!.edit!.changes![client.uri(f)]![0]!;
    const text = client.textOf(f)!;
    const lines = text.split("\n");
    lines[edit.range.start.line] =
      lines[edit.range.start.line]!.slice(0, edit.range.start.character) +
      edit.newText +
      lines[edit.range.start.line]!.slice(edit.range.end.character);
    await client.change(f, lines.join("\n"));
    await client.waitForDiagnostics(f, (d) => d.length === 0);
  });

  it("an enum value typed wrong, with the fix lint suggests", async () => {
    const f = file("echo");
    await client.open(f, pythonConfig("echo").replace("TYPE_FP32", "FP32"));
    const ds = await client.waitForDiagnostics(f, (d) => d.length > 0);
    expect(codes(ds)).toEqual(["config-enum"]);
    const [fix] = await client.codeActions(f, ds);
    expect(fix!.title).toBe("Change 'FP32' to 'TYPE_FP32'");
  });

  it("an ensemble is checked against the step model's unsaved text, and clears when the step model's buffer is closed", async () => {
    await client.open(file("pipe"), PIPE);
    await client.waitForDiagnostics(file("pipe"), (d) => d.length === 0);
    // The step model's output renamed in its buffer, not saved: the ensemble maps a name it no longer has.
    await client.open(file("echo"), pythonConfig("echo").replace("OUTPUT0", "RESULT"));
    const ds = await client.waitForDiagnostics(file("pipe"), (d) => d.length > 0);
    expect(ds.map((d) => d.message).join("\n")).toMatch(/OUTPUT0/);
    expect(ds[0]!.range.start).toEqual(positionOf(PIPE, '"OUTPUT0"'));
    // Closed without saving: the file on disk is what counts again.
    await client.close(file("echo"));
    await client.waitForDiagnostics(file("pipe"), (d) => d.length === 0);
  });
});

describe("completion", () => {
  const labels = (items: Array<{ label: string }>) => items.map((i) => i.label);

  it("field names of the message the cursor is in, without those already set", async () => {
    const f = file("echo");
    const text = `${pythonConfig("echo")}dynamic_batching {\n  \n}\n`;
    await client.open(f, text);
    const inner = labels(await client.completion(f, positionOf(text, "dynamic_batching {\n  ").line + 1, 2));
    expect(inner).toContain("max_queue_delay_microseconds");
    expect(inner).toContain("preferred_batch_size");
    expect(inner).not.toContain("max_batch_size");
    const top = labels(await client.completion(f, text.split("\n").length - 1, 0));
    expect(top).toContain("instance_group");
    expect(top).not.toContain("backend"); // already set
    expect(top).not.toContain("max_queue_delay_microseconds");
  });

  it("in a half-typed file: an unclosed message, a string not yet closed", async () => {
    const f = file("echo");
    const text = `${pythonConfig("echo")}instance_group [ { count: 2 kind: KIND_CPU } ]\ndynamic_batching {\n  max_q`;
    await client.open(f, text);
    const end = positionOf(text, "  max_q", 7);
    const items = labels(await client.completion(f, end.line, end.character));
    expect(items[0]).toBe("max_queue_delay_microseconds");
    expect(items).not.toContain("instance_group");
    const ensemble = `${PIPE.slice(0, PIPE.indexOf('model_name: "echo"'))}model_name: "ec`;
    await client.open(file("pipe"), ensemble);
    const at = positionOf(ensemble, 'model_name: "ec', 'model_name: "ec'.length);
    const models = await client.completion(file("pipe"), at.line, at.character);
    expect(labels(models)[0]).toBe("echo");
    // The opening quote is replaced with the whole quoted name.
    expect(models[0]!.textEdit).toEqual({
      range: { start: positionOf(ensemble, '"ec'), end: at },
      newText: '"echo"',
    });
  });

  it("enum values after a field's colon, with Triton's documentation", async () => {
    const f = file("echo");
    const text = `${pythonConfig("echo")}instance_group [ { kind:  } ]\n`;
    await client.open(f, text);
    const p = positionOf(text, "kind: ", "kind: ".length);
    const items = await client.completion(f, p.line, p.character);
    expect(labels(items)).toEqual(["KIND_AUTO", "KIND_GPU", "KIND_CPU", "KIND_MODEL"]);
    expect(JSON.stringify(items[1]!.documentation)).toMatch(/must run on the GPU/);
  });

  it("model names in an ensemble step, and the step model's tensors in input_map and output_map", async () => {
    const f = file("pipe");
    await client.open(f, PIPE);
    let p = positionOf(PIPE, 'model_name: "', 'model_name: "'.length);
    expect(labels(await client.completion(f, p.line, p.character))).toEqual(["echo", "onnx_echo"]);
    p = positionOf(PIPE, 'key: "INPUT0"', "key: ".length);
    const keys = await client.completion(f, p.line, p.character);
    expect(labels(keys)).toEqual(["INPUT0"]);
    expect(keys[0]!.detail).toBe("echo input");
    p = positionOf(PIPE, 'key: "OUTPUT0"', "key: ".length);
    expect(labels(await client.completion(f, p.line, p.character))).toEqual(["OUTPUT0"]);
    p = positionOf(PIPE, 'value: "IN"', "value: ".length);
    expect(labels(await client.completion(f, p.line, p.character))).toEqual(["IN"]);
  });

  it("tensor names and dims from the ONNX model file", async () => {
    const f = file("onnx_echo");
    const text = ONNX_CONFIG.replace('name: "INPUT0"', 'name: "').replace(
      "dims: [ -1 ] } ]\noutput",
      "dims:  } ]\noutput",
    );
    await client.open(f, text);
    const p = positionOf(text, 'name: "', 'name: "'.length, 1);
    const names = await client.completion(f, p.line, p.character);
    expect(labels(names)).toEqual(["INPUT0"]);
    expect(names[0]!.detail).toMatch(/^TYPE_FP32 \[-1, -1\]$/);
  });
});

describe("hover and go to definition", () => {
  it("a field's documentation from model_config.proto, and a tensor's type and shape from the model file", async () => {
    const f = file("onnx_echo");
    await client.open(f, ONNX_CONFIG);
    let p = positionOf(ONNX_CONFIG, "max_batch_size", 3);
    let h = await client.hover(f, p.line, p.character);
    expect(JSON.stringify(h!.contents)).toMatch(/max_batch_size\*\* `int32`.*Maximum batch size allowed for inference/);
    p = positionOf(ONNX_CONFIG, "INPUT0", 2);
    h = await client.hover(f, p.line, p.character);
    expect(JSON.stringify(h!.contents)).toMatch(/input of the model file `1\/model.onnx`: `TYPE_FP32 \[-1, -1\]`/);
  });

  it("from an ensemble step to the step model's config, and from a mapped tensor to its declaration", async () => {
    const f = file("pipe");
    await client.open(f, PIPE);
    let p = positionOf(PIPE, '"echo"', 2);
    let loc = await client.definition(f, p.line, p.character);
    expect(loc!.uri).toBe(client.uri(file("echo")));
    expect(loc!.range.start).toEqual({ line: 0, character: 0 });
    p = positionOf(PIPE, '"OUTPUT0"', 2);
    loc = await client.definition(f, p.line, p.character);
    expect(loc!.uri).toBe(client.uri(file("echo")));
    expect(loc!.range.start).toEqual(positionOf(pythonConfig("echo"), '"OUTPUT0"'));
    p = positionOf(PIPE, 'value: "IN"', 9);
    loc = await client.definition(f, p.line, p.character);
    expect(loc).toEqual({
      uri: client.uri(f),
      range: { start: positionOf(PIPE, '"IN"'), end: positionOf(PIPE, '"IN"', 4) },
    });
  });
});

describe("formatting", () => {
  it("keeps CRLF line breaks and normalises the spacing around colons", async () => {
    const f = file("echo");
    const lf = `name:"echo"\nbackend :  "python"\nmax_batch_size:    8 # batches\n\n\n${ECHO_IO_LINES}`;
    const text = lf.replace(/\n/g, "\r\n");
    await client.open(f, text);
    const edits = await client.format(f);
    const out = applyEdits(text, edits);
    expect(out).toBe(
      `name: "echo"\r\nbackend: "python"\r\nmax_batch_size: 8 # batches\r\n\r\n${ECHO_IO_LINES.replace(/\n/g, "\r\n")}`,
    );
    expect(out.replace(/\r\n/g, "")).not.toContain("\n");
    // The untouched lines' edits are absent: three lines respaced and one blank line removed.
    expect(edits).toHaveLength(4);
  });

  it("re-indents and spaces, keeping comments and the order of fields", async () => {
    const f = file("echo");
    const text = `# the echo model\nname:"echo"   \nbackend: "python" # runs model.py\nmax_batch_size: 8\ninput [\n{ name: "INPUT0"\n data_type: TYPE_FP32\n      dims: [ -1 ] } ]\n\n\n\noutput [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]`;
    await client.open(f, text);
    const edits = await client.format(f);
    const want = `# the echo model\nname: "echo"\nbackend: "python" # runs model.py\nmax_batch_size: 8\ninput [\n  { name: "INPUT0"\n    data_type: TYPE_FP32\n    dims: [ -1 ] } ]\n\noutput [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n`;
    expect(applyEdits(text, edits)).toBe(want);
    // Only the lines that change are edited: the comment, backend and max_batch_size lines are not.
    const touched = new Set(edits.map((e) => e.range.start.line));
    expect([0, 2, 3, 4].filter((l) => touched.has(l))).toEqual([]);
    // Formatted text gives no edit.
    await client.change(f, want);
    expect(await client.format(f)).toEqual([]);
    // A half-typed file is left alone.
    await client.change(f, "name: {");
    expect(await client.format(f)).toEqual([]);
  });
});

describe("quick fixes that move files", () => {
  it("a config in a version folder: move it where Triton reads it (a rename the editor applies)", async () => {
    const renamer = LspClient.inProcess({ watch: false });
    await renamer.initialize(repo, { renames: true });
    try {
      const misplaced = path.join(repo, "stray", "1", "config.pbtxt");
      await writeFiles(repo, { "stray/1/config.pbtxt": pythonConfig("stray"), "stray/1/model.py": "" });
      await renamer.open(misplaced, pythonConfig("stray"));
      const ds = await renamer.waitForDiagnostics(misplaced, (d) => codes(d).includes("config-in-version-folder"));
      const fix = (await renamer.codeActions(misplaced, ds)).find((a) => a.title.startsWith("Move"));
      expect(fix!.title).toBe("Move 1/config.pbtxt to stray/config.pbtxt");
      expect(fix!.edit!.documentChanges).toEqual([
        { kind: "rename", oldUri: renamer.uri(misplaced), newUri: renamer.uri(file("stray")) },
      ]);
    } finally {
      await renamer.stop();
    }
  });

  it("a model folder Triton cannot serve: rename it, and the config's name with it", async () => {
    const renamer = LspClient.inProcess({ watch: false });
    await renamer.initialize(repo, { renames: true });
    try {
      await writeFiles(repo, pythonModel("my model"));
      const f = path.join(repo, "my model", "config.pbtxt");
      const text = pythonConfig("my model");
      await renamer.open(f, text);
      const ds = await renamer.waitForDiagnostics(f, (d) => codes(d).includes("model-name-unsafe"));
      const unsafe = ds.filter((d) => d.code === "model-name-unsafe");
      const [fix] = await renamer.codeActions(f, unsafe);
      expect(fix!.title).toBe("Rename the folder to 'my_model' and the config's name with it");
      expect(fix!.edit!.documentChanges).toEqual([
        {
          textDocument: { uri: renamer.uri(f), version: 1 },
          edits: [
            { range: { start: { line: 0, character: 6 }, end: { line: 0, character: 16 } }, newText: '"my_model"' },
          ],
        },
        {
          kind: "rename",
          oldUri: renamer.uri(path.join(repo, "my model")),
          newUri: renamer.uri(path.join(repo, "my_model")),
        },
      ]);
      // An editor that cannot rename files is offered no fix it could not apply.
      await client.open(f, text);
      const plain = await client.waitForDiagnostics(f, (d) => codes(d).includes("model-name-unsafe"));
      expect(
        await client.codeActions(
          f,
          plain.filter((d) => d.code === "model-name-unsafe"),
        ),
      ).toEqual([]);
    } finally {
      await renamer.stop();
    }
  });
});

describe("the batch dimension", () => {
  it("dims written with the batch dimension of a batching model: the fix writes the model file's shape without it", async () => {
    const f = file("onnx_echo");
    const text = ONNX_CONFIG.replace(
      'name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ]',
      'name: "INPUT0" data_type: TYPE_FP32 dims: [ -1, -1 ]',
    );
    await client.open(f, text);
    const ds = await client.waitForDiagnostics(f, (d) => codes(d).includes("model-io-dims"));
    const [fix] = await client.codeActions(
      f,
      ds.filter((d) => d.code === "model-io-dims"),
    );
    expect(fix!.title).toBe("Set dims: [ -1 ]");
    const edit = fix!.edit!.changes![client.uri(f)]![0]!;
    expect(edit.newText).toBe("[ -1 ]");
    const lines = text.split("\n");
    const l = lines[edit.range.start.line]!;
    lines[edit.range.start.line] =
      l.slice(0, edit.range.start.character) + edit.newText + l.slice(edit.range.end.character);
    await client.change(f, lines.join("\n"));
    await client.waitForDiagnostics(f, (d) => d.length === 0);
  });
});
