import fs from "node:fs";
import path from "node:path";
import { fromText } from "@bufbuild/protobuf/txtpb";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Diagnostic, DiagnosticError } from "../../src/repo/diagnostics.js";
import { ModelConfigSchema } from "../../src/repo/gen/model_config_pb.js";
import { parseModelConfig, parseModelConfigOrThrow } from "../../src/repo/parse.js";
import { ARTICLE_FIXTURES, SAMPLE_MODELS } from "./helpers.js";

const FILE = "/fuzz/m/config.pbtxt";

const seeds: string[] = [
  ...fs.readdirSync(ARTICLE_FIXTURES).filter((f) => f.endsWith(".pbtxt")).map((f) => fs.readFileSync(path.join(ARTICLE_FIXTURES, f), "utf8")),
  ...(fs.existsSync(SAMPLE_MODELS)
    ? fs
        .readdirSync(SAMPLE_MODELS)
        .map((m) => path.join(SAMPLE_MODELS, m, "config.pbtxt"))
        .filter((f) => fs.existsSync(f))
        .map((f) => fs.readFileSync(f, "utf8"))
    : []),
];

/** A diagnostic must point inside the text: an existing line, a column at most one past its end. */
function pointsInside(text: string, d: Diagnostic): boolean {
  const lines = text.split("\n");
  const line = lines[d.line - 1];
  return line !== undefined && d.column >= 1 && d.column <= line.length + 1;
}

/** The contract: never throws, and either a config or at least one well-placed error. */
function checkContract(text: string): void {
  const r = parseModelConfig(text, FILE);
  if (r.parsed) {
    expect(r.diagnostics).toEqual([]);
  } else {
    expect(r.diagnostics.length).toBeGreaterThan(0);
    for (const d of r.diagnostics) {
      expect(d.severity).toBe("error");
      expect(d.file).toBe(FILE);
      expect(pointsInside(text, d), `${d.line}:${d.column} outside the text for ${JSON.stringify(text)}`).toBe(true);
    }
  }
  try {
    parseModelConfigOrThrow(text, FILE);
  } catch (err) {
    expect(err).toBeInstanceOf(DiagnosticError);
  }
}

const TOKENS = ["{", "}", "[", "]", "<", ">", ":", ",", ";", "-", '"', "'", "#", "\n", " ", "\\", "0x", "1e", ".", "name", "dims", "input", "TYPE_FP32", "-inf", "key", "value", "\0", "é", "\u{1F600}"];

/** An edit of a valid config: delete, insert or replace a slice, duplicate or swap lines. */
const mutation = (seed: string) =>
  fc.oneof(
    fc.record({ kind: fc.constant("delete" as const), at: fc.nat(seed.length), len: fc.integer({ min: 1, max: 20 }) }),
    fc.record({ kind: fc.constant("insert" as const), at: fc.nat(seed.length), what: fc.oneof(fc.constantFrom(...TOKENS), fc.string({ maxLength: 6 })) }),
    fc.record({ kind: fc.constant("replace" as const), at: fc.nat(seed.length), what: fc.constantFrom(...TOKENS) }),
    fc.record({ kind: fc.constant("dupline" as const), at: fc.nat(200) }),
    fc.record({ kind: fc.constant("swaplines" as const), a: fc.nat(200), b: fc.nat(200) }),
  );

type Mutation =
  | { kind: "delete"; at: number; len: number }
  | { kind: "insert"; at: number; what: string }
  | { kind: "replace"; at: number; what: string }
  | { kind: "dupline"; at: number }
  | { kind: "swaplines"; a: number; b: number };

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
  }
}

describe("parser fuzzing", () => {
  it("has seeds", () => {
    expect(seeds.length).toBeGreaterThanOrEqual(7);
  });

  it("survives arbitrary text", () => {
    fc.assert(fc.property(fc.string({ unit: "grapheme", maxLength: 200 }), checkContract), { numRuns: 400 });
  });

  it("survives arbitrary token soup", () => {
    fc.assert(fc.property(fc.array(fc.constantFrom(...TOKENS), { maxLength: 60 }), (parts) => checkContract(parts.join(" "))), { numRuns: 400 });
  });

  it("survives mutated real configs", () => {
    const arb = fc
      .constantFrom(...seeds)
      .chain((seed) => fc.tuple(fc.constant(seed), fc.array(mutation(seed), { minLength: 1, maxLength: 4 })));
    fc.assert(
      fc.property(arb, ([seed, muts]) => checkContract(muts.reduce<string>((t, m) => apply(t, m as Mutation), seed))),
      { numRuns: 600 },
    );
  });

  it("accepts exactly what the library's reader accepts", () => {
    // Our position-keeping reader runs first; it must never refuse text the library (and Triton) reads.
    const arb = fc
      .constantFrom(...seeds)
      .chain((seed) => fc.tuple(fc.constant(seed), fc.array(mutation(seed), { minLength: 1, maxLength: 2 })));
    fc.assert(
      fc.property(arb, ([seed, muts]) => {
        const text = muts.reduce<string>((t, m) => apply(t, m as Mutation), seed);
        let libraryAccepts = true;
        try {
          fromText(ModelConfigSchema, text);
        } catch {
          libraryAccepts = false;
        }
        expect(parseModelConfig(text, FILE).parsed !== undefined).toBe(libraryAccepts);
      }),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 800) },
    );
  });

  it("points exactly at a stray character", () => {
    // '@', '=' and '$' are valid only inside strings and comments; anywhere else the reader stops there.
    const arb = fc.constantFrom(...seeds).chain((seed) => fc.tuple(fc.constant(seed), fc.nat(seed.length - 1), fc.constantFrom("@", "=", "$")));
    fc.assert(
      fc.property(arb, ([seed, at, ch]) => {
        const text = seed.slice(0, at) + ch + seed.slice(at);
        const r = parseModelConfig(text, FILE);
        if (r.parsed) return;
        const before = text.slice(0, at);
        expect(r.diagnostics[0]).toMatchObject({ line: before.split("\n").length, column: at - before.lastIndexOf("\n"), message: `unexpected '${ch}'` });
      }),
      { numRuns: 300 },
    );
  });
});
