import path from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { ECHO_ONNX, pythonConfig, pythonModel, removeTempRepos, tempRepo, writeFiles } from "../repo/helpers.js";
import { LspClient, applyEdits } from "./client.js";
import { PIPE } from "./fixtures.js";

// Quick fixes for findings whose fix is one obvious edit, through the real server: each fix,
// applied as the editor applies it, leaves the config without that finding.

let repo: string;
let client: LspClient;
const file = (model: string) => path.join(repo, model, "config.pbtxt");

beforeEach(async () => {
  repo = await tempRepo();
  await writeFiles(repo, { ...pythonModel("echo"), "pipe/config.pbtxt": PIPE, "pipe/1/": "" });
  client = LspClient.inProcess({ watch: false, lint: { autoComplete: true } });
  await client.initialize(repo);
});
afterEach(async () => {
  await client.stop();
});
afterAll(removeTempRepos);

/** Opens `text`, waits for the finding `code`, applies its preferred fix; returns the fix's title and the new text. */
async function fix(f: string, text: string, code: string): Promise<{ title: string; text: string }> {
  await client.open(f, text);
  const ds = await client.waitForDiagnostics(f, (d) => d.some((x) => x.code === code));
  const actions = await client.codeActions(
    f,
    ds.filter((d) => d.code === code),
  );
  const a = actions.find((x) => x.isPreferred) ?? actions[0];
  expect(a, JSON.stringify(ds)).toBeDefined();
  const fixed = applyEdits(text, a!.edit!.changes![client.uri(f)]!);
  await client.change(f, fixed);
  await client.waitForDiagnostics(f, (d) => !d.some((x) => x.code === code));
  return { title: a!.title, text: fixed };
}

describe("quick fixes read from lint's hints", () => {
  it("a misspelt bool: ture -> true, flase -> false", async () => {
    const f = file("echo");
    const base = pythonConfig("echo");
    let r = await fix(f, `${base}dynamic_batching { preserve_ordering: ture }\n`, "config-schema");
    expect(r.title).toBe("Change 'ture' to 'true'");
    expect(r.text).toContain("preserve_ordering: true }");
    await client.close(f);
    r = await fix(f, `${base}dynamic_batching { preserve_ordering: flase }\n`, "config-schema");
    expect(r.title).toBe("Change 'flase' to 'false'");
  });

  it("a typo in an ensemble step's input_map value: the nearest ensemble input, though nothing else reads it", async () => {
    const r = await fix(file("pipe"), PIPE.replace('value: "IN"', 'value: "INN"'), "ensemble-tensor-not-produced");
    expect(r.title).toBe("Change 'INN' to 'IN'");
    expect(r.text).toBe(PIPE);
  });

  it("a typo in an output_map value: the ensemble output nothing writes", async () => {
    const r = await fix(file("pipe"), PIPE.replace('value: "OUT"', 'value: "OTU"'), "ensemble-tensor-unused");
    expect(r.title).toBe("Change 'OTU' to 'OUT'");
    expect(r.text).toBe(PIPE);
  });

  it("a typo in an input_map or output_map key: the step model's tensor", async () => {
    let r = await fix(file("pipe"), PIPE.replace('key: "INPUT0"', 'key: "INPTU0"'), "ensemble-unknown-input");
    expect(r.text).toBe(PIPE);
    await client.close(file("pipe"));
    r = await fix(file("pipe"), PIPE.replace('key: "OUTPUT0"', 'key: "OUTPUT00"'), "ensemble-unknown-output");
    expect(r.title).toBe("Change 'OUTPUT00' to 'OUTPUT0'");
    expect(r.text).toBe(PIPE);
  });

  it("an input the model file has and the config does not list: added to the config's input list", async () => {
    const onnx = (io: string) =>
      `name: "onnx_echo"\nbackend: "onnxruntime"\nmax_batch_size: 8\ninput [\n  {\n    name: "${io}"\n    data_type: TYPE_FP32\n    dims: [ -1 ]\n  }\n]\noutput [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n`;
    await writeFiles(repo, { "onnx_echo/config.pbtxt": onnx("INPUT0"), "onnx_echo/1/model.onnx": ECHO_ONNX });
    const r = await fix(file("onnx_echo"), onnx("extra"), "model-io-missing");
    expect(r.title).toBe('Add input "INPUT0" as the model file has it');
    expect(r.text).toBe(
      onnx("extra").replace("  }\n]", '  },\n  { name: "INPUT0" data_type: TYPE_FP32 dims: [-1] }\n]'),
    );
  });

  it("a step asking for a version its model does not have: model_version: -1", async () => {
    const r = await fix(file("pipe"), PIPE.replace("model_version: -1", "model_version: 3"), "ensemble-model-version");
    expect(r.title).toBe("Set model_version: -1");
    expect(r.text).toBe(PIPE);
  });

  it("a string left unquoted, a number quoted, a bad dimension, a missing colon, a field an ensemble cannot have", async () => {
    const f = file("echo");
    const base = pythonConfig("echo");
    let r = await fix(f, base.replace('backend: "python"', "backend: python"), "config-schema");
    expect(r.title).toBe("Quote 'python'");
    expect(r.text).toBe(base);
    await client.close(f);
    r = await fix(f, base.replace("max_batch_size: 8", 'max_batch_size: "8"'), "config-schema");
    expect(r.text).toBe(base);
    await client.close(f);
    r = await fix(f, base.replace("dims: [ -1 ]", "dims: [ -2 ]"), "dims-invalid");
    expect(r.title).toBe("Change -2 to -1 (a variable size)");
    expect(r.text).toBe(base);
    await client.close(f);
    r = await fix(f, base.replace('name: "echo"', 'name "echo"'), "config-syntax");
    expect(r.title).toBe("Add ':' after name");
    expect(r.text).toBe(base);
    r = await fix(
      file("pipe"),
      PIPE.replace("ensemble_scheduling {", "instance_group [ { count: 1 } ]\nensemble_scheduling {"),
      "ensemble-instance-group",
    );
    expect(r.title).toBe("Delete instance_group");
    expect(r.text).toBe(PIPE);
  });
});
