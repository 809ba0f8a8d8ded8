import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { DiagnosticError } from "../../src/repo/diagnostics.js";
import { parentPath, parseModelConfig, parseModelConfigOrThrow } from "../../src/repo/parse.js";
import { ARTICLE_FIXTURES, SAMPLE_MODELS, posOf } from "./helpers.js";

const FILE = "/repo/m/config.pbtxt";

function firstError(text: string) {
  const r = parseModelConfig(text, FILE, { model: "m" });
  expect(r.parsed).toBeUndefined();
  expect(r.diagnostics).toHaveLength(1);
  return r.diagnostics[0]!;
}

const sampleConfigs = fs.existsSync(SAMPLE_MODELS)
  ? fs
      .readdirSync(SAMPLE_MODELS)
      .map((m) => path.join(SAMPLE_MODELS, m, "config.pbtxt"))
      .filter((f) => fs.existsSync(f))
  : [];
const articleConfigs = fs.readdirSync(ARTICLE_FIXTURES).filter((f) => f.endsWith(".pbtxt"));

describe("parseModelConfig on real configs", () => {
  it("finds the sample repository's configs", () => {
    expect(sampleConfigs.length).toBeGreaterThanOrEqual(4);
  });

  it.each(sampleConfigs.map((f) => [path.basename(path.dirname(f)), f]))("parses models/%s", (name, file) => {
    const r = parseModelConfig(fs.readFileSync(file, "utf8"), file);
    expect(r.diagnostics).toEqual([]);
    expect(r.parsed?.json.name).toBe(name);
  });

  it.each(articleConfigs)("parses the article's %s", (f) => {
    const file = path.join(ARTICLE_FIXTURES, f);
    const r = parseModelConfig(fs.readFileSync(file, "utf8"), file);
    expect(r.diagnostics).toEqual([]);
    expect(r.parsed).toBeDefined();
  });

  it("reads the article's queue policy as Triton's JSON", () => {
    const r = parseModelConfig(
      fs.readFileSync(path.join(ARTICLE_FIXTURES, "queue-policy-snippet.pbtxt"), "utf8"),
      FILE,
    );
    expect(r.parsed?.json).toEqual({
      dynamic_batching: {
        preferred_batch_size: [16, 32],
        max_queue_delay_microseconds: 4000,
        // REJECT is the enum's zero value, which proto3 JSON leaves out (so does Triton's config JSON).
        default_queue_policy: {
          default_timeout_microseconds: 10000000,
          allow_timeout_override: true,
          max_queue_size: 512,
        },
        priority_levels: 3,
        default_priority_level: 2,
      },
    });
  });
});

describe("ModelConfigJson", () => {
  it("uses proto field names, enum names and numbers for 64-bit integers", () => {
    const r = parseModelConfig(
      `name: "m"
platform: "ensemble"
max_batch_size: 4
input [ { name: "A" data_type: TYPE_FP32 dims: [ -1, 3 ] reshape { shape: [ 3, -1 ] } } ]
version_policy { specific { versions: [ 1, 2 ] } }
ensemble_scheduling { step [ { model_name: "x" model_version: -1 input_map { key: "a" value: "A" } output_map { key: "b" value: "B" } } ] }
parameters { key: "k" value { string_value: "v" } }`,
      FILE,
    );
    expect(r.parsed?.json).toEqual({
      name: "m",
      platform: "ensemble",
      max_batch_size: 4,
      input: [{ name: "A", data_type: "TYPE_FP32", dims: [-1, 3], reshape: { shape: [3, -1] } }],
      version_policy: { specific: { versions: [1, 2] } },
      ensemble_scheduling: {
        step: [{ model_name: "x", model_version: -1, input_map: { a: "A" }, output_map: { b: "B" } }],
      },
      parameters: { k: { string_value: "v" } },
    });
  });

  it("keeps a message that is present but empty, as dynamic batching needs", () => {
    expect(parseModelConfig("dynamic_batching { }", FILE).parsed?.json).toEqual({ dynamic_batching: {} });
  });
});

describe("SourceMap", () => {
  const text = `name: "m"
input { name: "a" dims: 1 dims: 2 }
input [ { name: "b" dims: [ 3, 4 ] } ]
dynamic_batching {
  priority_queue_policy { key: 2 value { timeout_action: DELAY } }
  priority_queue_policy [ { key: 0x3 value: { } } ]
}
ensemble_scheduling { step [ { input_map { key: "K" value: "V" } } ] }`;
  const src = (): NonNullable<ReturnType<typeof parseModelConfig>["parsed"]>["source"] => {
    const r = parseModelConfig(text.replace("ensemble_scheduling", "# ensemble_scheduling"), FILE);
    expect(r.diagnostics).toEqual([]);
    return r.parsed!.source;
  };

  it("counts repeated elements across occurrences, in file order", () => {
    const s = src();
    expect(s.at("input[0]")).toMatchObject(posOf(text, "input {"));
    expect(s.at("input[1]")).toMatchObject(posOf(text, '{ name: "b"'));
    expect(s.valueAt("input[0].dims[1]")).toMatchObject(posOf(text, "2 }"));
    expect(s.valueAt("input[1].dims[1]")).toMatchObject(posOf(text, "4 ]"));
  });

  it("keys map entries by their key, numbers in decimal", () => {
    const s = src();
    expect(s.valueAt("dynamic_batching.priority_queue_policy{2}.key")).toMatchObject(posOf(text, "2 value"));
    expect(s.valueAt("dynamic_batching.priority_queue_policy{2}.timeout_action")).toMatchObject(posOf(text, "DELAY"));
    expect(s.has("dynamic_batching.priority_queue_policy{3}")).toBe(true);
  });

  it("falls back to the nearest enclosing part, then to 1:1", () => {
    const s = src();
    expect(s.at("input[1].reshape.shape[0]")).toMatchObject(posOf(text, '{ name: "b"'));
    expect(s.at("output[0]")).toEqual({ line: 1, column: 1, offset: 0 });
  });

  it("records map keys given twice", () => {
    const t = 'ensemble_scheduling { step { input_map { key: "K" value: "A" } input_map { key: "K" value: "B" } } }';
    const r = parseModelConfig(t, FILE);
    expect(r.parsed?.source.duplicateKeys).toEqual([
      expect.objectContaining({
        path: "ensemble_scheduling.step[0].input_map{K}",
        key: "K",
        second: expect.objectContaining(posOf(t, "input_map", 0, 2)),
      }),
    ]);
    expect(r.parsed?.json.ensemble_scheduling?.step?.[0]?.input_map).toEqual({ K: "B" });
  });

  it("parentPath strips one segment", () => {
    expect(parentPath("a.b[2]")).toBe("a.b");
    expect(parentPath("a.b{k.x}")).toBe("a.b");
    expect(parentPath("a.b")).toBe("a");
    expect(parentPath("a")).toBeUndefined();
  });
});

describe("errors found by the library, with positions it does not give", () => {
  it.each([
    [
      'name: "m"\ninput { name: "a" dim: [1] }',
      "dim:",
      "unknown field 'dim' in ModelInput",
      "Did you mean 'dims'?",
      "config-unknown-field",
    ],
    [
      'name: "m"\nmax_queue_delay_microseconds: 100',
      "max_queue",
      "unknown field 'max_queue_delay_microseconds' in ModelConfig",
      "'max_queue_delay_microseconds' belongs inside dynamic_batching { ... }.",
      "config-unknown-field",
    ],
    [
      'name: "m"\ninput { data_type: TYPE_FLOAT32 }',
      "TYPE_FLOAT32",
      "'TYPE_FLOAT32' is not a valid DataType for 'data_type'",
      "Did you mean TYPE_FP32?",
      "config-enum",
    ],
    [
      "instance_group { kind: GPU }",
      "GPU",
      "'GPU' is not a valid Kind for 'kind'",
      "Did you mean KIND_GPU?",
      "config-enum",
    ],
    [
      "input { data_type: FLOAT }",
      "FLOAT",
      "'FLOAT' is not a valid DataType for 'data_type'",
      "Did you mean TYPE_FP32?",
      "config-enum",
    ],
    [
      'max_batch_size: "8"',
      '"8"',
      "invalid value for 'max_batch_size': expected an integer, got a string",
      "Write numbers without quotes: max_batch_size: 8",
      "config-schema",
    ],
    [
      "name: mymodel",
      "mymodel",
      `invalid value for 'name': expected a string, got "mymodel"`,
      'Quote the value: name: "mymodel"',
      "config-schema",
    ],
    [
      'name: "a"\nname: "b"',
      'name: "b"',
      "'name' is set more than once (first set at 1:1)",
      "'name' takes a single value: remove one of them.",
      "config-duplicate-field",
    ],
    [
      "dynamic_batching { }\nsequence_batching { }",
      "sequence_batching",
      "'sequence_batching' cannot be set together with another of 'dynamic_batching', 'sequence_batching' or 'ensemble_scheduling'",
      "Keep only one of 'dynamic_batching', 'sequence_batching' or 'ensemble_scheduling'.",
      "config-oneof",
    ],
    [
      "dynamic_batching { default_queue_policy { max_queue_size: -1 } }",
      "-1",
      "invalid value for 'max_queue_size': an unsigned field does not accept a negative value",
      "'max_queue_size' cannot be negative.",
      "config-schema",
    ],
    [
      "dynamic_batching: 5",
      "5",
      `invalid value for 'dynamic_batching': expected "{" or "<", got "5"`,
      "'dynamic_batching' is a message: write dynamic_batching { ... }",
      "config-schema",
    ],
    [
      'name "m"',
      "name",
      'expected ":" before value of field "name"',
      "Separate the field and its value with a colon: name: ...",
      "config-syntax",
    ],
    ["max_batch_size: 1.5", "1.5", "expected an integer", undefined, "config-schema"],
    ["max_batch_size: 3000000000", "3000000000", "invalid value for 'max_batch_size'", undefined, "config-schema"],
    [
      'input_map { key: "a" foo: "b" }\n',
      "foo",
      "unknown field 'input_map' in ModelConfig",
      undefined,
      "config-unknown-field",
    ],
    [
      'parameters { key: "a" foo: "b" }',
      "foo",
      "unknown field 'foo' in an entry of map 'parameters'",
      "A map entry holds only 'key' and 'value'.",
      "config-unknown-field",
    ],
  ])("%j", (text, needle, message, hint, code) => {
    const d = firstError(text);
    const where =
      code === "config-unknown-field" && needle === "foo" && text.startsWith("input_map")
        ? posOf(text, "input_map")
        : posOf(text, needle);
    expect({ line: d.line, column: d.column }).toEqual(where);
    expect(d.message).toContain(message);
    if (hint) expect(d.hint).toBe(hint);
    expect(d).toMatchObject({ severity: "error", file: FILE, model: "m", code });
  });

  it("locates an error deep in a long file", () => {
    const filler = Array.from(
      { length: 200 },
      (_, i) => `input { name: "in${i}" data_type: TYPE_FP32 dims: [ ${i + 1} ] }`,
    ).join("\n");
    const text = `${filler}\noutput { name: "o" data_type: TYPE_FP32 dims: [ 1 ] labels: "x" }\n${filler}`;
    const d = firstError(text);
    expect({ line: d.line, column: d.column }).toEqual(posOf(text, "labels"));
  });

  it("locates errors between fields of a long file, and errors in its last field", () => {
    const filler = Array.from(
      { length: 200 },
      (_, i) => `input { name: "in${i}" data_type: TYPE_FP32 dims: [ ${i + 1} ] }`,
    ).join("\n");
    // A field set twice is an error of neither occurrence alone: the search must read the whole text.
    const twice = `max_batch_size: 4\n${filler}\nmax_batch_size: 8\n${filler}`;
    const d = firstError(twice);
    expect([d.line, d.column, d.code]).toEqual([
      posOf(twice, "max_batch_size", 0, 2).line,
      1,
      "config-duplicate-field",
    ]);
    const last = `${filler}\ninstance_group [ { kind: KIND_CPU count: 1 }, { kind: KIND_TPU } ]\n`;
    expect(firstError(last)).toMatchObject({ ...posOf(last, "KIND_TPU"), code: "config-enum" });
  });

  it("reports a field set twice across a long file before a later field's own error of the same words", () => {
    // Found by the parser fuzz: `output` alone fails with "name is repeated" as the whole text does,
    // but the whole text's first error is the top-level `name` set twice, before it.
    const filler = Array.from(
      { length: 200 },
      (_, i) => `input { name: "in${i}" data_type: TYPE_FP32 dims: [ ${i + 1} ] }`,
    ).join("\n");
    const text = `name: "m"\nname: "m"\n${filler}\noutput { name: "o" name: "o" data_type: TYPE_FP32 dims: [ 1 ] }\n`;
    expect(firstError(text)).toMatchObject({ line: 2, column: 1, code: "config-duplicate-field" });
  });

  it.each([
    ["max_batch_size", "max_batch_size: ", "", "int32"],
    ["dims", 'input { name: "a" data_type: TYPE_FP32 dims: [ 1, -', " ] }", "int64"],
    [
      "priority_queue_policy key",
      "dynamic_batching { priority_levels: 2 priority_queue_policy { key: ",
      " value { } } }",
      "uint64",
    ],
  ])("refuses a megabyte-long number for %s at once, saying it does not fit", (field, before, after, type) => {
    const text = `name: "m"\n${before}${"9".repeat(1_000_000)}${after}\n`;
    const started = performance.now();
    const d = firstError(text);
    expect(performance.now() - started).toBeLessThan(2000);
    expect(d).toMatchObject({
      ...posOf(text, "999"),
      code: "config-schema",
      message: `invalid value for '${field}': a number of 1000000 characters does not fit in ${type}`,
    });
  });

  it("quotes a shorter number that does not fit", () => {
    const text = 'input { name: "a" data_type: TYPE_FP32 dims: [ 1, 0x1ffffffffffffffff ] }';
    expect(firstError(text)).toMatchObject({
      ...posOf(text, "0x1f"),
      message: "invalid value for 'dims': 0x1ffffffffffffffff does not fit in int64",
    });
  });

  it("still reports an earlier error first when a huge number follows it", () => {
    const text = `name: "m"\nmax_batch_size: "8"\ninput { dims: [ ${"9".repeat(30)} ] }\n`;
    expect(firstError(text)).toMatchObject({
      ...posOf(text, '"8"'),
      message: "invalid value for 'max_batch_size': expected an integer, got a string",
    });
  });

  it("accepts long numbers that fit: leading zeros, and floats", () => {
    const r = parseModelConfig(
      `max_batch_size: ${"0".repeat(40)}7\noptimization { cuda { graph_spec { graph_lower_bound { batch_size: 1 } } } }\nsequence_batching { direct { minimum_slot_utilization: 0.${"5".repeat(400)} } }\n`,
      FILE,
    );
    expect(r.diagnostics).toEqual([]);
    expect(r.parsed?.config.maxBatchSize).toBe(7);
  });

  it("clips a megabyte-long name in its message", () => {
    const d = firstError(`input { data_type: TYPE_${"X".repeat(1_000_000)} }`);
    expect(d.message.length).toBeLessThan(300);
    expect(d.message).toContain("…(1000007 characters) is not a valid DataType"); // the quotes are part of the run
  });

  it("reports invalid UTF-8 where the string starts", () => {
    const d = firstError('name: "ok"\nplatform: "a\\xff"');
    expect(d).toMatchObject({ line: 2, column: 11, message: "invalid value for 'platform': invalid UTF-8 in string" });
  });
});

describe("parseModelConfigOrThrow", () => {
  it("returns the parsed config", () => {
    expect(parseModelConfigOrThrow('name: "m"', FILE).config.name).toBe("m");
  });

  it("throws DiagnosticError carrying the diagnostics", () => {
    try {
      parseModelConfigOrThrow("name: {", FILE);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(DiagnosticError);
      expect((err as DiagnosticError).diagnostics[0]).toMatchObject({ line: 1, column: 7 });
      expect((err as DiagnosticError).message).toBe(`${FILE}:1:7: '{' is never closed`);
    }
  });
});

describe("config templates (tensorrtllm_backend's ${...} placeholders)", () => {
  // The shape of tensorrtllm_backend's all_models/inflight_batcher_llm/tensorrt_llm/config.pbtxt.
  const TEMPLATE = `name: "tensorrt_llm"
backend: "\${triton_backend}"
max_batch_size: \${triton_max_batch_size}

# \${not_a_placeholder_in_a_comment}
parameters: {
  key: "gpt_model_path"
  value: { string_value: "\${engine_dir}" }
}
`;

  it("says the file is a template, names its placeholders and the tool that fills them, at the first one Triton cannot read", () => {
    const file = "/repo/tensorrt_llm/config.pbtxt";
    const { diagnostics } = parseModelConfig(TEMPLATE, file, { model: "tensorrt_llm" });
    expect(diagnostics).toHaveLength(1);
    const d = diagnostics[0]!;
    expect(d.code).toBe("config-template");
    expect({ line: d.line, column: d.column }).toEqual(posOf(TEMPLATE, "${triton_max_batch_size}"));
    expect(d.message).toBe(
      "config.pbtxt is a template: '${triton_max_batch_size}' and 2 more placeholder(s) (triton_backend, engine_dir) are to be filled before Triton can read it",
    );
    expect(d.hint).toContain("tools/fill_template.py");
    expect(d.hint).toContain(
      "python3 tools/fill_template.py -i tensorrt_llm/config.pbtxt triton_backend:<value>,triton_max_batch_size:<value>,engine_dir:<value>",
    );
    expect(d.message).not.toContain("not_a_placeholder_in_a_comment");
  });

  it("following the hint, filled the way fill_template.py fills it, the config parses", () => {
    const filled = TEMPLATE.replace("${triton_backend}", "tensorrtllm")
      .replace("${triton_max_batch_size}", "64")
      .replace("${engine_dir}", "/engines/llama");
    const { diagnostics, parsed } = parseModelConfig(filled, "/repo/tensorrt_llm/config.pbtxt");
    expect(diagnostics).toEqual([]);
    expect(parsed?.config.maxBatchSize).toBe(64);
  });

  it("a '$' that is no placeholder stays a syntax error", () => {
    const { diagnostics } = parseModelConfig("max_batch_size: $5\n", "/repo/m/config.pbtxt");
    expect(diagnostics.map((d) => d.code)).toEqual(["config-syntax"]);
  });
});
