/**
 * Fuzzing with fast-check. The parser: never throws, and either a config or one well-placed error,
 * accepting exactly what the library's reader accepts. Lint as a whole (lintRepository on a real
 * repository, every rule and the ensemble checks across models): random and mutated config.pbtxt
 * files (text edits, truncations, raw byte flips and bytes that are not UTF-8, deep nesting, huge
 * numbers, unicode, files of about a megabyte) never make it throw or hang, and every diagnostic
 * points inside the file it names. Set FUZZ_RUNS to scale the number of runs (default 1).
 */
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { fromText } from "@bufbuild/protobuf/txtpb";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Diagnostic, DiagnosticError } from "../../src/repo/diagnostics.js";
import { ModelConfigSchema } from "../../src/repo/gen/model_config_pb.js";
import { type LintOptions, type LintResult, lintRepository } from "../../src/repo/lint.js";
import { parseModelConfig, parseModelConfigOrThrow } from "../../src/repo/parse.js";
import { lintFacts } from "../../src/runtimes/kinds.js";
import { ARTICLE_FIXTURES, ECHO_MODEL_PY, SAMPLE_MODELS, removeTempRepos, tempRepo, writeFiles } from "./helpers.js";

afterAll(removeTempRepos);

const FILE = "/fuzz/m/config.pbtxt";
const SCALE = Number(process.env.FUZZ_RUNS ?? 1) || 1;
const runs = (n: number): number => Math.max(1, Math.round(n * SCALE));

const sampleNames = fs.existsSync(SAMPLE_MODELS)
  ? fs.readdirSync(SAMPLE_MODELS).filter((m) => fs.existsSync(path.join(SAMPLE_MODELS, m, "config.pbtxt")))
  : [];
const seeds: string[] = [
  ...fs
    .readdirSync(ARTICLE_FIXTURES)
    .filter((f) => f.endsWith(".pbtxt"))
    .map((f) => fs.readFileSync(path.join(ARTICLE_FIXTURES, f), "utf8")),
  ...sampleNames.map((m) => fs.readFileSync(path.join(SAMPLE_MODELS, m, "config.pbtxt"), "utf8")),
];

/** A diagnostic must point inside the text: an existing line, a column at most one past its end. */
function pointsInside(text: string, d: Pick<Diagnostic, "line" | "column">): boolean {
  const lines = text.split("\n");
  const line = lines[d.line - 1];
  return (
    Number.isInteger(d.line) &&
    Number.isInteger(d.column) &&
    line !== undefined &&
    d.column >= 1 &&
    d.column <= line.length + 1
  );
}

/** The parser's contract: never throws, and either a config or at least one well-placed error. */
function checkContract(text: string): void {
  const r = parseModelConfig(text, FILE);
  if (r.parsed) {
    expect(r.diagnostics).toEqual([]);
  } else {
    expect(r.diagnostics.length).toBeGreaterThan(0);
    for (const d of r.diagnostics) {
      expect(d.severity).toBe("error");
      expect(d.file).toBe(FILE);
      expect(
        pointsInside(text, d),
        `${d.line}:${d.column} outside the text for ${JSON.stringify(text.slice(0, 500))}`,
      ).toBe(true);
    }
  }
  try {
    parseModelConfigOrThrow(text, FILE);
  } catch (err) {
    expect(err).toBeInstanceOf(DiagnosticError);
  }
}

/** Numbers at and past the limits of every field type, in every spelling the format allows. */
const HUGE = [
  "2147483647",
  "2147483648",
  "-2147483649",
  "4294967295",
  "4294967296",
  "9223372036854775807",
  "9223372036854775808",
  "-9223372036854775809",
  "18446744073709551615",
  "18446744073709551616",
  "99999999999999999999999999999999999999",
  "0x7fffffff",
  "0xffffffffffffffff",
  "0x1ffffffffffffffff",
  "01777777777777777777777",
  "0777",
  "00000000000000000000000000001",
  "1e308",
  "1e309",
  "-1e309",
  "1.7976931348623157e308",
  "4.9e-324",
  "-0",
  "0.0",
  "inf",
  "-inf",
  "nan",
  "infinity",
  "1f",
  ".5",
];
/**
 * Strings and names beyond ASCII: accents, CJK, emoji with joiners, right-to-left, combining marks, invisible
 * characters.
 */
const UNICODE = [
  "é",
  "naïve",
  "模型",
  "😀",
  "👩‍👩‍👧",
  "עברית",
  "e\u0301",
  "\u200b",
  "\u00a0",
  "\u2028",
  "\ufeff",
  "\ufffd",
  "\u0000",
  "𝔘𝔫𝔦",
  "ᚠᛇᚻ",
];

const TOKENS = [
  "{",
  "}",
  "[",
  "]",
  "<",
  ">",
  ":",
  ",",
  ";",
  "-",
  '"',
  "'",
  "#",
  "\n",
  " ",
  "\\",
  "0x",
  "1e",
  ".",
  "name",
  "dims",
  "input",
  "TYPE_FP32",
  "-inf",
  "key",
  "value",
  "\0",
  ...UNICODE,
  ...HUGE,
];

/** An edit of a valid config: delete, insert or replace a slice, duplicate or swap lines, truncate. */
const mutation = (seed: string) =>
  fc.oneof(
    fc.record({ kind: fc.constant("delete" as const), at: fc.nat(seed.length), len: fc.integer({ min: 1, max: 20 }) }),
    fc.record({
      kind: fc.constant("insert" as const),
      at: fc.nat(seed.length),
      what: fc.oneof(fc.constantFrom(...TOKENS), fc.string({ maxLength: 6 })),
    }),
    fc.record({ kind: fc.constant("replace" as const), at: fc.nat(seed.length), what: fc.constantFrom(...TOKENS) }),
    fc.record({ kind: fc.constant("dupline" as const), at: fc.nat(200) }),
    fc.record({ kind: fc.constant("swaplines" as const), a: fc.nat(200), b: fc.nat(200) }),
    fc.record({ kind: fc.constant("truncate" as const), at: fc.nat(seed.length) }),
  );

type Mutation =
  | { kind: "delete"; at: number; len: number }
  | { kind: "insert"; at: number; what: string }
  | { kind: "replace"; at: number; what: string }
  | { kind: "dupline"; at: number }
  | { kind: "swaplines"; a: number; b: number }
  | { kind: "truncate"; at: number };

function apply(text: string, m: Mutation): string {
  switch (m.kind) {
    case "delete":
      return text.slice(0, m.at) + text.slice(m.at + m.len);
    case "insert":
      return text.slice(0, m.at) + m.what + text.slice(m.at);
    case "replace":
      return text.slice(0, m.at) + m.what + text.slice(m.at + 1);
    case "dupline": {
      const lines = text.split("\n");
      const i = m.at % lines.length;
      lines.splice(i, 0, lines[i]!);
      return lines.join("\n");
    }
    case "swaplines": {
      const lines = text.split("\n");
      const a = m.a % lines.length;
      const b = m.b % lines.length;
      [lines[a], lines[b]] = [lines[b]!, lines[a]!];
      return lines.join("\n");
    }
    case "truncate":
      return text.slice(0, m.at);
  }
}

const mutatedSeed = (maxEdits: number) =>
  fc
    .constantFrom(...seeds)
    .chain((seed) => fc.tuple(fc.constant(seed), fc.array(mutation(seed), { minLength: 1, maxLength: maxEdits })))
    .map(([seed, muts]) => muts.reduce<string>((t, m) => apply(t, m as Mutation), seed));

// ---------------------------------------------------------------------------------------------
// Bytes: what an editor crash, a bad download or another encoding leaves in a file

/**
 * Byte sequences that are not UTF-8: stray continuation bytes, overlong forms, surrogates, cut-off sequences, code
 * points past U+10FFFF.
 */
const INVALID_UTF8: number[][] = [
  [0x80],
  [0xbf],
  [0xff],
  [0xfe, 0xff],
  [0xc0, 0xaf],
  [0xe0, 0x80, 0xaf],
  [0xed, 0xa0, 0x80],
  [0xe2, 0x82],
  [0xf0, 0x9f, 0x98],
  [0xf4, 0x90, 0x80, 0x80],
  [0xc3],
];

const byteEdit = (len: number) =>
  fc.oneof(
    fc.record({
      kind: fc.constant("flip" as const),
      at: fc.nat(Math.max(0, len - 1)),
      mask: fc.integer({ min: 1, max: 255 }),
    }),
    fc.record({
      kind: fc.constant("insert" as const),
      at: fc.nat(len),
      bytes: fc.oneof(
        fc.constantFrom(...INVALID_UTF8),
        fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 4 }),
      ),
    }),
    fc.record({ kind: fc.constant("truncate" as const), at: fc.nat(len) }),
  );
type ByteEdit =
  | { kind: "flip"; at: number; mask: number }
  | { kind: "insert"; at: number; bytes: number[] }
  | { kind: "truncate"; at: number };

function applyBytes(buf: Buffer, e: ByteEdit): Buffer {
  const at = Math.min(e.at, buf.length);
  switch (e.kind) {
    case "flip": {
      if (buf.length === 0) return buf;
      const out = Buffer.from(buf);
      out[Math.min(at, buf.length - 1)]! ^= e.mask;
      return out;
    }
    case "insert":
      return Buffer.concat([buf.subarray(0, at), Buffer.from(e.bytes), buf.subarray(at)]);
    case "truncate":
      // Anywhere, including inside a multi-byte character.
      return buf.subarray(0, at);
  }
}

const mutatedBytes = fc
  .constantFrom(...seeds.map((s) => Buffer.from(s)))
  .chain((seed) => fc.tuple(fc.constant(seed), fc.array(byteEdit(seed.length), { minLength: 1, maxLength: 6 })))
  .map(([seed, edits]) => edits.reduce<Buffer>((b, e) => applyBytes(b, e as ByteEdit), seed));

// ---------------------------------------------------------------------------------------------
// Configs built from the schema with odd values: reach the rules, not only the parser

const quote = (s: string): string =>
  `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n").replace(/\0/g, "\\000")}"`;
const number = fc.oneof(
  fc.constantFrom(...HUGE),
  fc.integer({ min: -5, max: 300 }).map(String),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
);
const word = fc.oneof(
  fc.constantFrom(
    "INPUT0",
    "OUTPUT0",
    "IN",
    "OUT",
    "TEXT_INPUT",
    "input_ids",
    "tokenized_ids",
    "x",
    "",
    "constructor",
    "__proto__",
    "toString",
  ),
  fc.constantFrom(...UNICODE),
  fc.string({ unit: "grapheme", maxLength: 12 }),
);
const dataType = fc.constantFrom(
  "TYPE_FP32",
  "TYPE_INT64",
  "TYPE_STRING",
  "TYPE_BOOL",
  "TYPE_INVALID",
  "TYPE_FP16",
  "TYPE_BF16",
  "TYPE_UINT8",
);
const modelName = fc.constantFrom("fuzzed", "echo", "outer", "bert_tokenizer", "sentiment_classifier", "nope", "");
const dims = fc.array(number, { maxLength: 4 }).map((ds) => `dims: [ ${ds.join(", ")} ]`);
const io = fc
  .tuple(word, dataType, dims, fc.option(fc.array(number, { maxLength: 3 }), { nil: undefined }), fc.boolean())
  .map(
    ([name, type, d, reshape, optional]) =>
      `{ name: ${quote(name)} data_type: ${type} ${d}${reshape ? ` reshape { shape: [ ${reshape.join(", ")} ] }` : ""}${optional ? " optional: true" : ""} }`,
  );
const policy = fc
  .tuple(fc.constantFrom("REJECT", "DELAY"), number, fc.boolean(), number)
  .map(
    ([action, timeout, override, size]) =>
      `{ timeout_action: ${action} default_timeout_microseconds: ${timeout} allow_timeout_override: ${override} max_queue_size: ${size} }`,
  );
const dynamicBatching = fc
  .tuple(
    fc.array(number, { maxLength: 5 }),
    number,
    fc.option(number),
    fc.option(number),
    fc.option(policy),
    fc.array(fc.tuple(number, policy), { maxLength: 3 }),
    fc.boolean(),
  )
  .map(([sizes, delay, levels, level, dq, pq, order]) =>
    [
      "dynamic_batching {",
      `  preferred_batch_size: [ ${sizes.join(", ")} ]`,
      `  max_queue_delay_microseconds: ${delay}`,
      levels !== null ? `  priority_levels: ${levels}` : "",
      level !== null ? `  default_priority_level: ${level}` : "",
      dq ? `  default_queue_policy ${dq}` : "",
      ...pq.map(([k, p]) => `  priority_queue_policy { key: ${k} value ${p} }`),
      `  preserve_ordering: ${order}`,
      "}",
    ].join("\n"),
  );
const instanceGroup = fc
  .tuple(number, fc.constantFrom("KIND_CPU", "KIND_GPU", "KIND_AUTO", "KIND_MODEL"), fc.array(number, { maxLength: 3 }))
  .map(
    ([count, kind, gpus]) =>
      `instance_group [ { count: ${count} kind: ${kind}${gpus.length ? ` gpus: [ ${gpus.join(", ")} ]` : ""} } ]`,
  );
const versionPolicy = fc.oneof(
  fc.array(number, { maxLength: 3 }).map((vs) => `version_policy { specific { versions: [ ${vs.join(", ")} ] } }`),
  number.map((n) => `version_policy { latest { num_versions: ${n} } }`),
  fc.constant("version_policy { all { } }"),
);
const mapEntries = (kind: string) =>
  fc
    .array(fc.tuple(word, word), { maxLength: 3 })
    .map((es) => es.map(([k, v]) => `${kind} { key: ${quote(k)} value: ${quote(v)} }`).join(" "));
const ensembleSteps = fc
  .array(fc.tuple(modelName, fc.option(number), mapEntries("input_map"), mapEntries("output_map")), { maxLength: 4 })
  .map(
    (steps) =>
      `ensemble_scheduling {\n${steps.map(([m, v, i, o]) => `  step { model_name: ${quote(m)}${v !== null ? ` model_version: ${v}` : ""} ${i} ${o} }`).join("\n")}\n}`,
  );
const parameters = fc
  .array(fc.tuple(word, word), { maxLength: 3 })
  .map((ps) => ps.map(([k, v]) => `parameters { key: ${quote(k)} value { string_value: ${quote(v)} } }`).join("\n"));

/** A config assembled from the schema: every part optional, in any order, with odd values. */
const builtConfig = fc
  .tuple(
    fc.oneof(
      fc.constant('name: "fuzzed"'),
      word.map((w) => `name: ${quote(w)}`),
    ),
    fc.constantFrom(
      'backend: "python"',
      'platform: "ensemble"',
      'platform: "onnxruntime_onnx"',
      'platform: "tensorrt_plan"',
      'backend: "pytorch"',
      'backend: "custom"',
      "",
    ),
    number.map((n) => `max_batch_size: ${n}`),
    fc.array(io, { maxLength: 3 }).map((xs) => (xs.length ? `input [ ${xs.join(", ")} ]` : "")),
    fc.array(io, { maxLength: 3 }).map((xs) => (xs.length ? `output [ ${xs.join(", ")} ]` : "")),
    fc.oneof(
      dynamicBatching,
      ensembleSteps,
      fc.constant("sequence_batching { oldest { preferred_batch_size: [ 4, 99 ] } }"),
      fc.constant(""),
    ),
    fc.option(instanceGroup, { nil: "" }),
    fc.option(versionPolicy, { nil: "" }),
    parameters,
  )
  .chain((parts) => fc.shuffledSubarray(parts, { minLength: 0, maxLength: parts.length }))
  .chain((parts) => fc.constantFrom("\n", " ", " \n\t").map((sep) => parts.join(sep)));

/** Messages opened `depth` deep, with `{`, `<` or `[`, closed or not, under schema or unknown names. */
const deepNesting = fc
  .tuple(
    fc.integer({ min: 1, max: 400 }),
    fc.constantFrom("{", "<", "[ {"),
    fc.constantFrom("optimization", "input", "dynamic_batching", "x", "value"),
    fc.boolean(),
  )
  .map(([depth, open, field, closed]) => {
    const close = open === "{" ? "}" : open === "<" ? ">" : "} ]";
    return `name: "fuzzed"\n${`${field} ${open} `.repeat(depth)}${closed ? `${close} `.repeat(depth) : ""}`;
  });

// ---------------------------------------------------------------------------------------------
// Lint on a real repository

/**
 * Bounds per lint run, far below a hang or a blow-up with the input's size, on lint's CPU time (this
 * process's): another process keeping the machine busy slows the wall clock, not the work lint does.
 * The tests' own timeouts (minutes) only stop a hang; a busy machine doubles their wall time.
 */
const SMALL_MS = 3_000;
const LARGE_MS = 15_000;

let repo = "";
const CONFIG = (): string => path.join(repo, "fuzzed", "config.pbtxt");

/**
 * The repository each fuzzed config.pbtxt is linted in: the sample models (ensembles among them),
 * an echo model, and an ensemble `outer` that runs the fuzzed model, so the rules across models
 * see it both as an ensemble and as a model an ensemble runs.
 */
beforeAll(async () => {
  repo = await tempRepo();
  for (const m of sampleNames)
    await fsp.cp(path.join(SAMPLE_MODELS, m), path.join(repo, m), {
      recursive: true,
      filter: (s) => !s.includes("__pycache__"),
    });
  await writeFiles(repo, {
    "echo/config.pbtxt":
      'name: "echo"\nbackend: "python"\nmax_batch_size: 8\ninput [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n',
    "echo/1/model.py": ECHO_MODEL_PY,
    "outer/config.pbtxt": `name: "outer"
platform: "ensemble"
max_batch_size: 8
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] } ]
ensemble_scheduling { step [ { model_name: "fuzzed" model_version: -1 input_map { key: "INPUT0" value: "IN" } output_map { key: "OUTPUT0" value: "OUT" } } ] }
`,
    "outer/1/": "",
    "fuzzed/1/model.py": ECHO_MODEL_PY,
  });
});

const lintOptions: fc.Arbitrary<LintOptions> = fc.record(
  {
    runtime: fc.constantFrom("local" as const, "docker" as const, "kind" as const),
    gpuAvailable: fc.boolean(),
    gpuCount: fc.integer({ min: 1, max: 4 }),
    gpuMissingSeverity: fc.constantFrom("error" as const, "warning" as const),
  },
  { requiredKeys: [] },
);

/**
 * The length of each line of a file as lint reads it (UTF-8, bad bytes as U+FFFD), or null for a
 * folder; undefined when the file does not exist.
 */
function lineLengths(file: string): number[] | null | undefined {
  if (!fs.existsSync(file)) return undefined;
  if (fs.statSync(file).isDirectory()) return null;
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .map((l) => l.length);
}

/**
 * Only our diagnostics, each complete and pointing inside the file (or at 1:1 of the folder) it
 * names. Problems are collected and asserted once: a megabyte file can yield 100,000 diagnostics.
 */
function checkLintResult(r: LintResult): void {
  const files = new Map<string, number[] | null | undefined>();
  const problems: string[] = [];
  const problem = (d: Diagnostic, what: string) =>
    problems.length < 20 &&
    problems.push(`${what}: ${d.code} ${d.file}:${d.line}:${d.column} ${d.message.slice(0, 300)}`);
  for (const d of r.diagnostics) {
    if (d.severity !== "error" && d.severity !== "warning") problem(d, "severity");
    if (!/^[a-z0-9]+(-[a-z0-9]+)*$/.test(d.code)) problem(d, "code");
    if (typeof d.message !== "string" || d.message.length === 0 || d.message.length > 1000)
      problem(d, "message empty or over 1000 characters");
    if (d.hint !== undefined && (d.hint.length === 0 || d.hint.length > 1000))
      problem(d, "hint empty or over 1000 characters");
    if (path.relative(repo, d.file).startsWith("..")) problem(d, "file outside the repository");
    if (!files.has(d.file)) files.set(d.file, lineLengths(d.file));
    const lines = files.get(d.file);
    const len = lines?.[d.line - 1];
    if (lines === undefined) problem(d, "no such file");
    else if (
      lines === null
        ? d.line !== 1 || d.column !== 1
        : !Number.isInteger(d.line) ||
          !Number.isInteger(d.column) ||
          len === undefined ||
          d.column < 1 ||
          d.column > len + 1
    ) {
      problem(d, `outside the ${lines === null ? "folder (1:1)" : `file's ${lines.length} lines`}`);
    }
  }
  expect(problems).toEqual([]);
  const errors = r.diagnostics.filter((d) => d.severity === "error").length;
  expect([r.errorCount, r.warningCount]).toEqual([errors, r.diagnostics.length - errors]);
  for (const m of r.models) {
    expect(m.diagnostics.every((d) => d.model === m.name)).toBe(true);
    if (m.diagnostics.some((d) => d.severity === "error")) expect(m.wouldLoad).toBe(false);
  }
}

/** Writes the fuzzed config.pbtxt, lints the repository within `boundMs` of CPU time, and checks the result. */
async function lintCase(content: string | Uint8Array, options: LintOptions, boundMs = SMALL_MS): Promise<LintResult> {
  await fsp.writeFile(CONFIG(), content);
  const started = performance.now();
  const cpu = process.cpuUsage();
  const r = await lintRepository(repo, options);
  const used = process.cpuUsage(cpu);
  const ms = (used.user + used.system) / 1000;
  const wall = performance.now() - started;
  expect(ms, `lint used ${Math.round(ms)} ms of CPU (${Math.round(wall)} ms of wall time)`).toBeLessThan(boundMs);
  checkLintResult(r);
  expect(r.models.map((m) => m.name)).toContain("fuzzed");
  return r;
}

/** Gives the seed's own name line the fuzzed model's name, so more rules than the name check run. */
const asFuzzed = (text: string): string => text.replace(/^name: "[^"]*"/m, 'name: "fuzzed"');

describe("parser fuzzing", () => {
  it("has seeds", () => {
    expect(seeds.length).toBeGreaterThanOrEqual(7);
  });

  it("survives arbitrary text", () => {
    fc.assert(fc.property(fc.string({ unit: "grapheme", maxLength: 200 }), checkContract), { numRuns: runs(400) });
  });

  it("survives arbitrary token soup", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...TOKENS), { maxLength: 60 }), (parts) => checkContract(parts.join(" "))),
      { numRuns: runs(400) },
    );
  });

  it("survives mutated real configs", () => {
    fc.assert(fc.property(mutatedSeed(4), checkContract), { numRuns: runs(600) });
  });

  it("survives deep nesting", () => {
    fc.assert(fc.property(deepNesting, checkContract), { numRuns: runs(100) });
  });

  it("accepts exactly what the library's reader accepts", () => {
    // Our position-keeping reader runs first; it must never refuse text the library (and Triton) reads.
    const libraryAccepts = (text: string): boolean => {
      try {
        fromText(ModelConfigSchema, text);
        return true;
      } catch {
        return false;
      }
    };
    fc.assert(
      fc.property(fc.oneof(mutatedSeed(2), builtConfig), (text) => {
        expect(parseModelConfig(text, FILE).parsed !== undefined).toBe(libraryAccepts(text));
      }),
      { numRuns: runs(800) },
    );
  }, 120_000);

  it("points exactly at a stray character", () => {
    // '@', '=' and '$' are valid only inside strings and comments; anywhere else the reader stops there.
    const arb = fc
      .constantFrom(...seeds)
      .chain((seed) => fc.tuple(fc.constant(seed), fc.nat(seed.length - 1), fc.constantFrom("@", "=", "$")));
    fc.assert(
      fc.property(arb, ([seed, at, ch]) => {
        const text = seed.slice(0, at) + ch + seed.slice(at);
        const r = parseModelConfig(text, FILE);
        if (r.parsed) return;
        const before = text.slice(0, at);
        expect(r.diagnostics[0]).toMatchObject({
          line: before.split("\n").length,
          column: at - before.lastIndexOf("\n"),
          message: `unexpected '${ch}'`,
        });
      }),
      { numRuns: runs(300) },
    );
  });

  it("locates an error in a long file where it locates it in a short one", () => {
    // Long files are searched field by field (parse.ts): the position must not depend on that.
    const padding =
      Array.from({ length: 120 }, (_, i) => `parameters { key: "fuzz_padding_${i}" value { string_value: "v" } }`).join(
        "\n",
      ) + "\n";
    const padLines = padding.split("\n").length - 1;
    fc.assert(
      fc.property(mutatedSeed(2), (text) => {
        // After the padding's last field a leading ';' or ',' is that field's separator, as protobuf reads it:
        // the long file means something else there, so it proves nothing about positions.
        fc.pre(!/^(\s|#[^\n]*(\n|$))*[;,]/.test(text));
        const short = parseModelConfig(text, FILE);
        const long = parseModelConfig(padding + text, FILE);
        expect(long.parsed === undefined).toBe(short.parsed === undefined);
        if (!short.parsed) {
          const [s, l] = [short.diagnostics[0]!, long.diagnostics[0]!];
          // A field set twice may now be the padding's parameters: then only the verdict must agree.
          // Messages that quote a position ("first set at 5:5") quote it shifted too.
          const unshifted = l.message.replace(
            /at (\d+):(\d+)/g,
            (_m, line: string, col: string) => `at ${Number(line) - padLines}:${col}`,
          );
          if (l.line > padLines)
            expect([l.line - padLines, l.column, unshifted]).toEqual([s.line, s.column, s.message]);
        }
      }),
      { numRuns: runs(300) },
    );
  }, 120_000);
});

describe("lint fuzzing (lintRepository, every rule, ensembles across models)", () => {
  it("survives mutated real configs, truncations included", async () => {
    await fc.assert(
      fc.asyncProperty(mutatedSeed(4), lintOptions, async (text, o) => void (await lintCase(asFuzzed(text), o))),
      { numRuns: runs(150) },
    );
  }, 120_000);

  it("survives raw byte flips, cut-off characters and bytes that are not UTF-8", async () => {
    await fc.assert(
      fc.asyncProperty(mutatedBytes, lintOptions, async (bytes, o) => void (await lintCase(bytes, o))),
      { numRuns: runs(150) },
    );
  }, 120_000);

  it("survives configs built from the schema with huge numbers, unicode and empty names", async () => {
    let parsed = 0;
    await fc.assert(
      fc.asyncProperty(builtConfig, lintOptions, async (text, o) => {
        const r = await lintCase(text, o);
        if (r.models.find((m) => m.name === "fuzzed")!.config) parsed++;
      }),
      { numRuns: runs(200) },
    );
    // The generator must reach the rules, not only the parser's errors.
    expect(parsed).toBeGreaterThan(runs(200) / 10);
  }, 120_000);

  it("survives deep nesting", async () => {
    await fc.assert(
      fc.asyncProperty(deepNesting, async (text) => void (await lintCase(text, {}))),
      { numRuns: runs(40) },
    );
  }, 120_000);

  it("survives arbitrary text and token soup", async () => {
    const arb = fc.oneof(
      fc.string({ unit: "grapheme", maxLength: 300 }),
      fc.array(fc.constantFrom(...TOKENS), { maxLength: 80 }).map((ts) => ts.join(" ")),
    );
    await fc.assert(
      fc.asyncProperty(arb, lintOptions, async (text, o) => void (await lintCase(text, o))),
      { numRuns: runs(100) },
    );
  }, 120_000);

  describe("files of about a megabyte", () => {
    const MB = 1_000_000;
    const io = (i: number, u: string) =>
      `input { name: "in_${u}_${i}" data_type: TYPE_FP32 dims: [ ${(i % 7) + 1}, -1 ] }\n`;
    /** A valid python model config of about 1 MB: many inputs, unicode names, a dynamic batching block at the end. */
    function bigModel(unicode: string): string {
      let text = 'name: "fuzzed"\nbackend: "python"\nmax_batch_size: 8\n';
      for (let i = 0; text.length < MB; i++) text += io(i, unicode);
      return `${text}dynamic_batching { preferred_batch_size: [ 2, 4 ] }\n`;
    }
    /** An ensemble of about 1 MB: a chain of steps through the echo model, broken at `breakAt` (a fraction), or not. */
    function bigEnsemble(breakAt: number | null): string {
      let steps = "";
      let prev = "IN";
      let n = 0;
      const stepText = (from: string, to: string) =>
        `  step { model_name: "echo" model_version: -1 input_map { key: "INPUT0" value: "${from}" } output_map { key: "OUTPUT0" value: "${to}" } }\n`;
      const total = Math.floor(MB / stepText("t0000", "t0000").length);
      for (; n < total; n++) {
        const next = `t${n}`;
        steps += stepText(breakAt !== null && n === Math.floor(total * breakAt) ? "ghost" : prev, next);
        prev = next;
      }
      steps += stepText(prev, "OUT");
      return `name: "fuzzed"\nplatform: "ensemble"\nmax_batch_size: 8\ninput [ { name: "IN" data_type: TYPE_FP32 dims: [ -1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] } ]\nensemble_scheduling {\n${steps}}\n`;
    }

    it("lints a valid megabyte config, and one with a random edit or byte flip", async () => {
      const unicode = fc.sample(fc.constantFrom("é", "模型", "😀", "x"), 1)[0]!;
      const text = bigModel(unicode);
      const clean = await lintCase(text, lintFacts("local"), LARGE_MS);
      expect(clean.models.find((m) => m.name === "fuzzed")!.diagnostics.filter((d) => d.severity === "error")).toEqual(
        [],
      );
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            mutation(text).map((m) => apply(text, m as Mutation)),
            byteEdit(Buffer.byteLength(text)).map((e) => applyBytes(Buffer.from(text), e as ByteEdit)),
          ),
          async (content) => {
            await lintCase(content, lintFacts("local"), LARGE_MS);
          },
        ),
        { numRuns: runs(3) },
      );
    }, 300_000);

    it("lints a megabyte ensemble of chained steps, whole and broken", async () => {
      const whole = await lintCase(bigEnsemble(null), {}, LARGE_MS);
      expect(whole.models.find((m) => m.name === "fuzzed")!.diagnostics.filter((d) => d.severity === "error")).toEqual(
        [],
      );
      const breakAt = fc.sample(fc.double({ min: 0, max: 0.99, noNaN: true }), 1)[0]!;
      const broken = await lintCase(bigEnsemble(breakAt), {}, LARGE_MS);
      expect(broken.models.find((m) => m.name === "fuzzed")!.diagnostics.map((d) => d.code)).toContain(
        "ensemble-tensor-not-produced",
      );
    }, 300_000);

    it("lints megabyte strings, comments, numbers and names, and a megabyte of random bytes", async () => {
      const big = (s: string, n = MB) => s.repeat(Math.ceil(n / s.length)).slice(0, n);
      const cases: Array<string | Uint8Array> = [
        `name: "fuzzed"\nbackend: "python"\nparameters { key: "k" value { string_value: "${big("模型😀é")}" } }\n`,
        `# ${big("comment ")}\nname: "fuzzed"\nbackend: "python"\n`,
        `name: "fuzzed"\nbackend: "python"\nmax_batch_size: ${big("9")}\n`,
        `name: "fuzzed"\nbackend: "python"\ninput [ { name: "a" data_type: TYPE_FP32 dims: [ ${big("1")} ] } ]\n`,
        `name: "fuzzed"\nbackend: "python"\nmax_batch_size: 0.${big("5")}\n`,
        `name: "${big("n")}"\nbackend: "python"\n`,
        `name: "fuzzed"\n${big("x")}: 1\n`,
        `name: "fuzzed"\ninput [ ${big("{ ")}`,
        `name: "fuzzed"\n${big("input { } ")}`,
        Buffer.from(fc.sample(fc.uint8Array({ minLength: MB, maxLength: MB }), 1)[0]!),
        Buffer.from(big("\n")),
      ];
      for (const c of cases) await lintCase(c, {}, LARGE_MS);
    }, 300_000);
  });
});
