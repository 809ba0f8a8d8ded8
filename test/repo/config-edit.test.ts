import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { UserError } from "../../src/errors.js";
import { RepositoryWatcher, isIgnoredPath, type ModelChange } from "../../src/reload/watch.js";
import {
  type ConfigEdits,
  ConfigEditError,
  applyConfigEdits,
  applyConfigEditsToFile,
  backupName,
  describeConfigEdits,
} from "../../src/repo/config-edit.js";
import type { ModelConfigJson } from "../../src/repo/model-config.js";
import { listModelFiles } from "../../src/repo/model-files.js";
import { parseModelConfig } from "../../src/repo/parse.js";

const parse = (text: string): ModelConfigJson => {
  const r = parseModelConfig(text, "config.pbtxt");
  if (!r.parsed) throw new Error(`does not parse: ${JSON.stringify(r.diagnostics)}\n${text}`);
  return r.parsed.json;
};

/** What the edits mean, computed from the parsed JSON on its own (not by the editor's code). */
function expectedJson(before: ModelConfigJson, edits: ConfigEdits): ModelConfigJson {
  const j = structuredClone(before);
  if (edits.maxBatchSize !== undefined) {
    if (edits.maxBatchSize === 0) delete j.max_batch_size;
    else j.max_batch_size = edits.maxBatchSize;
  }
  if (edits.dynamicBatching === false) delete j.dynamic_batching;
  else if (edits.dynamicBatching) {
    const d = { ...j.dynamic_batching };
    const { preferredBatchSize: p, maxQueueDelayMicroseconds: q } = edits.dynamicBatching;
    if (p !== undefined) {
      if (p.length === 0) delete d.preferred_batch_size;
      else d.preferred_batch_size = p;
    }
    if (q !== undefined) {
      if (q === 0) delete d.max_queue_delay_microseconds;
      else d.max_queue_delay_microseconds = q;
    }
    j.dynamic_batching = d;
  }
  for (const { kind, count } of edits.instanceCounts ?? []) {
    const g = (j.instance_group ?? []).find((x) => (x.kind ?? "KIND_AUTO") === kind);
    if (g) g.count = count;
    else (j.instance_group ??= []).push({ count, kind });
  }
  return j;
}

/** Apply, then check what every result must be: it parses, means the edits, and applying again changes nothing. */
function applyChecked(text: string, edits: ConfigEdits): string {
  const out = applyConfigEdits(text, edits);
  expect(parse(out)).toEqual(expectedJson(parse(text), edits));
  expect(applyConfigEdits(out, edits)).toBe(out);
  expect(describeConfigEdits(out, edits)).toEqual([]);
  return out;
}

/**
 * The one changed stretch between two texts: `removed` in `a` became `added` in `b`. A pure cut
 * or insertion is slid to its leftmost equal place, a replacement widened to whole words, so the
 * stretch reads as the edit and not as a rotation of it ("eferred...pr").
 */
function hunk(a: string, b: string): { removed: string; added: string } {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let ea = a.length;
  let eb = b.length;
  while (ea > start && eb > start && a[ea - 1] === b[eb - 1]) {
    ea--;
    eb--;
  }
  if (ea === start || eb === start) {
    const longer = ea > start ? a : b;
    const len = Math.max(ea, eb) - start;
    let left = start;
    while (left > 0 && longer[left - 1] === longer[left - 1 + len]) left--;
    // Of the equal places, the first whose ends split no word.
    const word = (c: string | undefined) => c !== undefined && /\w/.test(c);
    const splits = (at: number) =>
      (word(longer[at - 1]) && word(longer[at])) || (word(longer[at + len - 1]) && word(longer[at + len]));
    let at = left;
    while (at < start && splits(at)) at++;
    const piece = longer.slice(at, at + len);
    return ea > start ? { removed: piece, added: "" } : { removed: "", added: piece };
  }
  while (start > 0 && /\w/.test(a[start - 1]!)) start--;
  while (ea < a.length && /\w/.test(a[ea]!)) {
    ea++;
    eb++;
  }
  return { removed: a.slice(start, ea), added: b.slice(start, eb) };
}

// A dynamic_batching whose priority levels, queue policies and map entries (a block and a list)
// must come through every edit of its tuned fields byte for byte.
const PRIORITY = `  priority_levels: 3 # three levels
  default_priority_level: 2
  default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 1000 }
  priority_queue_policy {
    key: 1
    value: < max_queue_size: 4  allow_timeout_override: true >   # level 1 queue
  }
  priority_queue_policy [ { key: 2 value { max_queue_size: 8 } }, { key: 3, value: { timeout_action: REJECT } } ]
`;

const BASE = `# A model for tune, with comments everywhere.
name: "m{#}"   # braces and a hash in a string
backend: "python"
max_batch_size: 8 # inline after a value
input [ { name: "x" data_type: TYPE_FP32 dims: [ -1 ] } ]   # "}" in a comment
dynamic_batching {
  preferred_batch_size: [ 4, 8 ] # preferred
${PRIORITY}  max_queue_delay_microseconds: 100
}
instance_group [
  {
    count: 1 # one
    kind: KIND_CPU
  }
]
parameters { key: "k" value: { string_value: "dynamic_batching { max_batch_size: 1 }" } }
`;

describe("applyConfigEdits, byte for byte (expected texts written by hand)", () => {
  it("sets max_batch_size, the tuned batching fields and a count in place, keeping the map entries", () => {
    const out = applyChecked(BASE, {
      maxBatchSize: 16,
      dynamicBatching: { preferredBatchSize: [2, 16], maxQueueDelayMicroseconds: 50 },
      instanceCounts: [{ kind: "KIND_CPU", count: 3 }],
    });
    expect(out).toBe(
      BASE.replace("max_batch_size: 8 #", "max_batch_size: 16 #")
        .replace("preferred_batch_size: [ 4, 8 ]", "preferred_batch_size: [ 2, 16 ]")
        .replace("max_queue_delay_microseconds: 100", "max_queue_delay_microseconds: 50")
        .replace("count: 1 # one", "count: 3 # one"),
    );
    expect(out).toContain(PRIORITY);
  });

  it("removes dynamic_batching with its lines, and only those", () => {
    const out = applyChecked(BASE, { dynamicBatching: false });
    const block = BASE.slice(BASE.indexOf("dynamic_batching {"), BASE.indexOf("instance_group ["));
    expect(out).toBe(BASE.replace(block, ""));
  });

  it("removes preferred_batch_size with its trailing comment, and appends a new instance group in the list's style", () => {
    const out = applyChecked(BASE, {
      dynamicBatching: { preferredBatchSize: [] },
      instanceCounts: [{ kind: "KIND_GPU", count: 2 }],
    });
    expect(out).toBe(
      BASE.replace("  preferred_batch_size: [ 4, 8 ] # preferred\n", "").replace(
        "    kind: KIND_CPU\n  }\n]",
        "    kind: KIND_CPU\n  },\n  {\n    count: 2\n    kind: KIND_GPU\n  }\n]",
      ),
    );
  });

  it("keeps CRLF line endings, tabs and a missing final line break when it inserts", () => {
    const text = 'name: "x"\r\nbackend: "python"\t# py\r\ndynamic_batching {\r\n\tpriority_levels: 2\r\n}';
    const out = applyChecked(text, {
      maxBatchSize: 4,
      dynamicBatching: { maxQueueDelayMicroseconds: 7 },
      instanceCounts: [{ kind: "KIND_GPU", count: 2 }],
    });
    expect(out).toBe(
      'name: "x"\r\nbackend: "python"\t# py\r\nmax_batch_size: 4\r\ndynamic_batching {\r\n\tpriority_levels: 2\r\n' +
        "\tmax_queue_delay_microseconds: 7\r\n}\r\ninstance_group [ { count: 2 kind: KIND_GPU } ]",
    );
  });

  it("creates dynamic_batching at the end, indented like the file", () => {
    const text = 'name: "x"\ninput {\n    name: "a"\n    data_type: TYPE_FP32\n    dims: [ 1 ]\n}\n';
    expect(applyChecked(text, { dynamicBatching: { preferredBatchSize: [4, 8], maxQueueDelayMicroseconds: 10 } })).toBe(
      `${text}dynamic_batching {\n    preferred_batch_size: [ 4, 8 ]\n    max_queue_delay_microseconds: 10\n}\n`,
    );
    expect(applyChecked(text, { dynamicBatching: {} })).toBe(`${text}dynamic_batching { }\n`);
    expect(applyChecked("dynamic_batching {}\n", { dynamicBatching: { maxQueueDelayMicroseconds: 3 } })).toBe(
      "dynamic_batching { max_queue_delay_microseconds: 3 }\n",
    );
    expect(
      applyChecked("dynamic_batching {priority_levels: 2}", { dynamicBatching: { maxQueueDelayMicroseconds: 3 } }),
    ).toBe("dynamic_batching {priority_levels: 2 max_queue_delay_microseconds: 3}");
  });

  it("edits <...> messages, repeated blocks, one-line blocks, separators and hex values", () => {
    const text =
      'instance_group < kind: KIND_GPU >;\ninstance_group {count: 0x2, kind: KIND_CPU}\nmax_batch_size: 0x10; name: "a" "b"\n' +
      "dynamic_batching < preferred_batch_size: 3; preferred_batch_size: [5,6] >";
    const out = applyChecked(text, {
      maxBatchSize: 32,
      dynamicBatching: { preferredBatchSize: [1, 2], maxQueueDelayMicroseconds: 9 },
      instanceCounts: [
        { kind: "KIND_CPU", count: 4 },
        { kind: "KIND_GPU", count: 5 },
      ],
    });
    expect(out).toBe(
      'instance_group < count: 5 kind: KIND_GPU >;\ninstance_group {count: 4, kind: KIND_CPU}\nmax_batch_size: 32; name: "a" "b"\n' +
        "dynamic_batching < preferred_batch_size: [ 1, 2 ]; max_queue_delay_microseconds: 9 >",
    );
  });

  it("adds a kind after instance groups written as blocks, in the blocks' own layout", () => {
    const text = "instance_group {\n  kind: KIND_CPU\n}\n# after\n";
    expect(applyChecked(text, { instanceCounts: [{ kind: "KIND_GPU", count: 2 }] })).toBe(
      "instance_group {\n  kind: KIND_CPU\n}\ninstance_group {\n  count: 2\n  kind: KIND_GPU\n}\n# after\n",
    );
    expect(applyChecked("instance_group []\n", { instanceCounts: [{ kind: "KIND_CPU", count: 1 }] })).toBe(
      "instance_group [ { count: 1 kind: KIND_CPU } ]\n",
    );
  });

  it("changes nothing when the file already says it (explicit or default values)", () => {
    const edits: ConfigEdits = {
      maxBatchSize: 8,
      dynamicBatching: { preferredBatchSize: [4, 8], maxQueueDelayMicroseconds: 100 },
      instanceCounts: [{ kind: "KIND_CPU", count: 1 }],
    };
    expect(applyConfigEdits(BASE, edits)).toBe(BASE);
    expect(describeConfigEdits(BASE, edits)).toEqual([]);
    expect(applyConfigEdits('name: "x"\n', { maxBatchSize: 0, dynamicBatching: false })).toBe('name: "x"\n');
  });

  it("describes each changed field with its value before and after", () => {
    expect(
      describeConfigEdits(BASE, {
        maxBatchSize: 16,
        dynamicBatching: { preferredBatchSize: [4, 8], maxQueueDelayMicroseconds: 0 },
        instanceCounts: [
          { kind: "KIND_CPU", count: 2 },
          { kind: "KIND_GPU", count: 1 },
        ],
      }),
    ).toEqual([
      { field: "max_batch_size", before: "8", after: "16" },
      { field: "dynamic_batching.max_queue_delay_microseconds", before: "100", after: "0" },
      { field: "instance_group[KIND_CPU].count", before: "1", after: "2" },
      { field: "instance_group[KIND_GPU].count", before: undefined, after: "1" },
    ]);
    expect(describeConfigEdits('name: "x"', { dynamicBatching: { preferredBatchSize: [2] } })).toEqual([
      { field: "dynamic_batching", before: undefined, after: "{ preferred_batch_size: [ 2 ] }" },
      { field: "dynamic_batching.preferred_batch_size", before: undefined, after: "[ 2 ]" },
    ]);
  });
});

// Odd configs: each must take every kind of edit with only the edited stretch changed.
const CORPUS: Record<string, string> = {
  commented: BASE,
  crlf: BASE.replace(/\n/g, "\r\n"),
  tabs: BASE.replace(/^ {2}/gm, "\t").replace(/^ {4}/gm, "\t\t"),
  "no final line break": BASE.trimEnd(),
  angle: 'name: "a"\ndynamic_batching < max_queue_delay_microseconds: 5 >\ninstance_group [ < kind: KIND_CPU > ]\n',
  "colon before messages":
    "dynamic_batching: { preferred_batch_size: 2 }\ninstance_group: [ { count: 2 kind: KIND_CPU } ]\n",
  "repeated blocks, odd order":
    "instance_group { kind: KIND_GPU count: 1 }\n# between\ninstance_group { count: 2; kind: KIND_CPU; }\nmax_batch_size: 4\n" +
    'dynamic_batching {\n  preferred_batch_size: 1\n  preferred_batch_size: [ 2, 3 ] # two more\n}\nname: "late"\n',
  "one line":
    'name:"x" max_batch_size:2 dynamic_batching{preferred_batch_size:[1,2] max_queue_delay_microseconds:3} instance_group[{kind:KIND_CPU}]',
  "priority policies only": `name: "p"\nmax_batch_size: 4\ndynamic_batching {\n${PRIORITY}}\n`,
  "nothing tuned yet": '# just a name\nname: "bare" # its name\n',
  empty: "",
};

const SINGLE_EDITS: Record<string, ConfigEdits> = {
  max_batch_size: { maxBatchSize: 64 },
  "dynamic_batching removed": { dynamicBatching: false },
  "preferred_batch_size set": { dynamicBatching: { preferredBatchSize: [16, 32] } },
  "preferred_batch_size removed": { dynamicBatching: { preferredBatchSize: [] } },
  "max_queue_delay set": { dynamicBatching: { maxQueueDelayMicroseconds: 2500 } },
  "CPU count": { instanceCounts: [{ kind: "KIND_CPU", count: 7 }] },
  "GPU count": { instanceCounts: [{ kind: "KIND_GPU", count: 6 }] },
};

describe("the corpus of odd configs", () => {
  for (const [name, text] of Object.entries(CORPUS)) {
    for (const [editName, edits] of Object.entries(SINGLE_EDITS)) {
      it(`${name}: ${editName} changes one stretch, and it holds only the edit`, () => {
        const out = applyChecked(text, edits);
        if (out === text) {
          expect(describeConfigEdits(text, edits)).toEqual([]);
          return;
        }
        const { removed, added } = hunk(text, out);
        // What went away and what came in are only the edited fields, blanks and separators.
        const strip = (s: string) => s.replace(/#[^\n]*/g, "").replace(/[\s,;]/g, "");
        if (edits.dynamicBatching === false) {
          expect(added).toBe("");
          expect(strip(removed)).toMatch(/^dynamic_batching:?[{<].*[}>]$/);
        } else if (edits.dynamicBatching?.preferredBatchSize?.length === 0 && parse(text).dynamic_batching) {
          expect(added).toBe("");
          expect(strip(removed)).toMatch(/^(preferred_batch_size:(\d+|\[[\d]*\]))+$/);
        } else {
          const words = (s: string) =>
            s
              .replace(/#[^\n]*/g, "")
              .replace(/[{}<>[\]:,;]/g, " ")
              .split(/\s+/)
              .filter(Boolean);
          const allowed =
            /^(\d+|max_batch_size|dynamic_batching|preferred_batch_size|max_queue_delay_microseconds|instance_group|count|kind|KIND_CPU|KIND_GPU|)$/;
          for (const w of [...words(removed), ...words(added)]) expect(w).toMatch(allowed);
        }
        // The priority levels and queue policies stay as written.
        if (text.includes(PRIORITY) && edits.dynamicBatching !== false) expect(out).toContain(PRIORITY);
      });
    }
  }
});

describe("refusals", () => {
  it("refuses a config with a syntax error with file:line:col, and never edits half of it", () => {
    const bad = 'name: "x"\nmax_batch_size: 4\ndynamic_batching {\n  preferred_batch_size: [ 4, 8\n}\n';
    let err: unknown;
    try {
      applyConfigEdits(bad, { maxBatchSize: 8 }, "/repo/m/config.pbtxt");
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigEditError);
    expect(err).toBeInstanceOf(UserError);
    const e = err as ConfigEditError;
    expect([e.reason, e.file, e.line, e.column]).toEqual(["syntax", "/repo/m/config.pbtxt", 5, 1]);
    expect(e.message.startsWith("/repo/m/config.pbtxt:5:1:")).toBe(true);
    expect(e.cause).toBeDefined();
    expect(() => describeConfigEdits(bad, { maxBatchSize: 8 })).toThrow(ConfigEditError);
  });

  it("refuses a config that is well formed but not a valid ModelConfig (a field set twice, an unknown field)", () => {
    for (const bad of ["max_batch_size: 1\nmax_batch_size: 2\n", "dynamic_batchin { }\n"]) {
      expect(() => applyConfigEdits(bad, { maxBatchSize: 8 })).toThrow(ConfigEditError);
    }
  });

  it("refuses dynamic batching beside sequence batching, naming where that is", () => {
    const text = 'name: "s"\nsequence_batching { max_sequence_idle_microseconds: 5 }\n';
    expect(() => applyConfigEdits(text, { dynamicBatching: { maxQueueDelayMicroseconds: 1 } })).toThrow(
      expect.objectContaining({ reason: "conflict", line: 2, column: 1 }),
    );
    // Removing what is not there is no conflict.
    expect(applyConfigEdits(text, { dynamicBatching: false })).toBe(text);
  });

  it("refuses edits out of range", () => {
    for (const edits of [
      { maxBatchSize: -1 },
      { maxBatchSize: 1.5 },
      { dynamicBatching: { preferredBatchSize: [0] } },
      { dynamicBatching: { maxQueueDelayMicroseconds: -3 } },
      { instanceCounts: [{ kind: "KIND_CPU" as const, count: 0 }] },
      {
        instanceCounts: [
          { kind: "KIND_CPU" as const, count: 1 },
          { kind: "KIND_CPU" as const, count: 2 },
        ],
      },
    ]) {
      expect(() => applyConfigEdits(BASE, edits)).toThrow(expect.objectContaining({ reason: "invalid-edit" }));
    }
  });

  it("throws nothing but ConfigEditError on any input (mangled corpus configs)", () => {
    const texts = Object.values(CORPUS);
    const results = new Set<string>();
    fc.assert(
      fc.property(
        fc.nat({ max: texts.length - 1 }),
        fc.array(fc.tuple(fc.nat(), fc.nat({ max: 3 }), fc.string({ maxLength: 3 })), { maxLength: 4 }),
        fc.nat({ max: Object.keys(SINGLE_EDITS).length - 1 }),
        (which, cuts, e) => {
          let t = texts[which]!;
          for (const [at, del, ins] of cuts) {
            const i = t.length ? at % t.length : 0;
            t = t.slice(0, i) + ins + t.slice(i + del);
          }
          const edits = Object.values(SINGLE_EDITS)[e]!;
          try {
            const out = applyConfigEdits(t, edits);
            expect(parse(out)).toEqual(expectedJson(parse(t), edits));
            results.add("edited");
          } catch (err) {
            // A refusal is fine; anything else, or our own check failing, is not.
            if (!(err instanceof ConfigEditError) || err.reason === "internal") throw err;
            results.add("refused");
          }
        },
      ),
      { numRuns: 300, seed: 16 },
    );
    // Both outcomes occur: the mangling is neither always harmless nor always fatal.
    expect([...results].sort()).toEqual(["edited", "refused"]);
  });
});

// ---------------------------------------------------------------------------------------------
// Random configs in random layouts, random edits

interface Generated {
  text: string;
  /** Top-level fields no edit touches, as written: each must come through byte for byte. */
  untouched: string[];
}

function generateConfig(rand: () => number): Generated {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const chance = (p: number) => rand() < p;
  let comments = 0;
  const ws = () => pick([" ", " ", "  ", "\t", "\n", "\n  ", "\n\t\t", ` # c${comments++} "}"\n`, "\n\n"]);
  const sep = () => pick(["", "", "", ";", ","]);
  const delims = () =>
    pick([
      ["{", "}"],
      ["{", "}"],
      ["<", ">"],
    ] as const);
  const msg = (fields: string[]) => {
    const [o, c] = delims();
    return `${chance(0.3) ? ":" : ""}${ws()}${o}${ws()}${fields.map((f) => f + sep() + ws()).join("")}${c}`;
  };
  const num = (n: number) => (chance(0.2) ? `0x${n.toString(16)}` : String(n));
  const list = (xs: string[]) => `[${ws()}${xs.join(`,${ws()}`)}${ws()}]`;

  const fields: Array<{ text: string; untouched: boolean }> = [];
  fields.push({ text: `name:${ws()}"m${pick(["", "{", "#", "}]"])}"`, untouched: true });
  fields.push({ text: `backend:${ws()}'python'`, untouched: true });
  if (chance(0.6)) fields.push({ text: `max_batch_size:${ws()}${num(Math.floor(rand() * 64))}`, untouched: false });
  if (chance(0.7))
    fields.push({
      text: `input${msg([`name: "in"`, `data_type: TYPE_FP32`, `dims:${ws()}${list(["-1", "3"])}`])}`,
      untouched: true,
    });
  if (chance(0.7)) {
    const inner: string[] = [];
    const pbs = Math.floor(rand() * 3);
    for (let i = 0; i < pbs; i++) {
      inner.push(
        chance(0.5)
          ? `preferred_batch_size:${ws()}${num(1 + Math.floor(rand() * 16))}`
          : `preferred_batch_size:${ws()}${list(chance(0.2) ? [] : ["2", "4"].slice(0, 1 + Math.floor(rand() * 2)))}`.replace(
              "[ ]",
              "[]",
            ),
      );
    }
    if (chance(0.5)) inner.push(`max_queue_delay_microseconds:${ws()}${num(Math.floor(rand() * 1000))}`);
    if (chance(0.5)) {
      inner.push(`priority_levels: 2`, `default_queue_policy${msg(["timeout_action: DELAY"])}`);
      const e1 = `{ key: 1 value${msg(["max_queue_size: 3"])} }`;
      const e2 = `{ key: 2 value${msg(["allow_timeout_override: true"])} }`;
      inner.push(
        chance(0.5)
          ? `priority_queue_policy ${e1} priority_queue_policy ${e2}`
          : `priority_queue_policy: ${list([e1, e2])}`,
      );
    }
    for (let i = inner.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [inner[i], inner[j]] = [inner[j]!, inner[i]!];
    }
    fields.push({ text: `dynamic_batching${msg(inner)}`, untouched: false });
  }
  const groups = Math.floor(rand() * 3);
  for (let g = 0; g < groups; g++) {
    const entry = () => {
      const f: string[] = [];
      if (chance(0.6)) f.push(`count:${ws()}${num(1 + Math.floor(rand() * 4))}`);
      if (chance(0.8)) f.push(`kind:${ws()}${pick(["KIND_CPU", "KIND_GPU", "KIND_AUTO"])}`);
      if (chance(0.3)) f.push(`gpus: [ 0 ]`);
      return msg(f).replace(/^:/, "");
    };
    fields.push({
      text: chance(0.5)
        ? `instance_group${entry()}`
        : `instance_group${chance(0.5) ? ":" : ""}${ws()}${list(Array.from({ length: Math.floor(rand() * 3) }, entry))}`,
      untouched: false,
    });
  }
  if (chance(0.5))
    fields.push({
      text: `parameters${msg(['key: "p"', 'value { string_value: "max_batch_size: 1 }" }'])}`,
      untouched: true,
    });
  for (let i = fields.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [fields[i], fields[j]] = [fields[j]!, fields[i]!];
  }
  let text =
    (chance(0.5) ? "# header\n" : "") +
    fields.map((f) => f.text + sep() + pick(["\n", "\n", " ", "\n\n", " # t\n"])).join("");
  if (chance(0.3)) text = text.trimEnd();
  const crlf = chance(0.3);
  if (crlf) text = text.replace(/\n/g, "\r\n");
  const untouched = fields.filter((f) => f.untouched).map((f) => (crlf ? f.text.replace(/\n/g, "\r\n") : f.text));
  return { text, untouched };
}

function generateEdits(rand: () => number): ConfigEdits {
  const edits: ConfigEdits = {};
  if (rand() < 0.5) edits.maxBatchSize = Math.floor(rand() * 128);
  const d = rand();
  if (d < 0.2) edits.dynamicBatching = false;
  else if (d < 0.7) {
    const db: NonNullable<Exclude<ConfigEdits["dynamicBatching"], false>> = {};
    if (rand() < 0.6)
      db.preferredBatchSize = Array.from({ length: Math.floor(rand() * 3) }, () => 1 + Math.floor(rand() * 32));
    if (rand() < 0.6) db.maxQueueDelayMicroseconds = Math.floor(rand() * 5000);
    edits.dynamicBatching = db;
  }
  if (rand() < 0.6) {
    edits.instanceCounts = [];
    if (rand() < 0.7) edits.instanceCounts.push({ kind: "KIND_CPU", count: 1 + Math.floor(rand() * 8) });
    if (rand() < 0.5) edits.instanceCounts.push({ kind: "KIND_GPU", count: 1 + Math.floor(rand() * 8) });
  }
  return edits;
}

/** mulberry32: a small seeded generator, so a failing case replays from fast-check's seed. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("random edits on random configs", () => {
  it("always parse, mean exactly the edits, keep the untouched fields byte for byte, and are idempotent", () => {
    let edited = 0;
    fc.assert(
      fc.property(fc.integer(), fc.integer(), (s1, s2) => {
        const { text, untouched } = generateConfig(seeded(s1));
        const edits = generateEdits(seeded(s2));
        if (!parseModelConfig(text, "config.pbtxt").parsed)
          throw new Error(`the generator wrote an invalid config:\n${text}`);
        const out = applyChecked(text, edits);
        if (out !== text) edited++;
        for (const u of untouched) expect(out).toContain(u);
        if (text.startsWith("# header")) expect(out.startsWith("# header")).toBe(true);
        expect(out.endsWith("\n")).toBe(text === "" || text.endsWith("\n"));
        expect(out.includes("\r\n")).toBe(text.includes("\r\n"));
      }),
      { numRuns: 250, seed: 1616 },
    );
    // The property is not vacuous: most random edits change the file.
    expect(edited).toBeGreaterThan(125);
  });
});

// ---------------------------------------------------------------------------------------------
// Writing the file

const temps: string[] = [];
afterAll(async () => {
  for (const t of temps) await fsp.rm(t, { recursive: true, force: true });
});

async function modelDir(config: string): Promise<{ repo: string; dir: string; file: string }> {
  const repo = await fsp.mkdtemp(path.join(os.tmpdir(), "config-edit-"));
  temps.push(repo);
  const dir = path.join(repo, "m");
  await fsp.mkdir(path.join(dir, "1"), { recursive: true });
  await fsp.writeFile(path.join(dir, "1", "model.py"), "# model\n");
  const file = path.join(dir, "config.pbtxt");
  await fsp.writeFile(file, config);
  return { repo, dir, file };
}

const backupsIn = async (dir: string) => (await fsp.readdir(dir)).filter((n) => n.includes("triton-dev-backup"));
const fixedNow = () => new Date("2026-12-02T01:45:00.123Z");

const edits: ConfigEdits = { maxBatchSize: 16, instanceCounts: [{ kind: "KIND_CPU", count: 2 }] };

describe("applyConfigEditsToFile", () => {
  it("writes the edit, keeps the old bytes in a .bak beside it, and keeps the file's mode and owner", async () => {
    const { dir, file } = await modelDir(BASE);
    await fsp.chmod(file, 0o664);
    const root = process.getuid?.() === 0;
    if (root) await fsp.chown(file, 1234, 4321);
    const r = await applyConfigEditsToFile(file, edits, BASE, { now: fixedNow });
    expect(r.changed).toBe(true);
    expect(await fsp.readFile(file, "utf8")).toBe(applyConfigEdits(BASE, edits));
    expect(r.text).toBe(applyConfigEdits(BASE, edits));
    expect(r.backup).toBe(path.join(dir, "config.pbtxt.triton-dev-backup-20261202T014500Z.bak"));
    expect(await fsp.readFile(r.backup!, "utf8")).toBe(BASE);
    const st = await fsp.stat(file);
    expect(st.mode & 0o7777).toBe(0o664);
    if (root) expect([st.uid, st.gid]).toEqual([1234, 4321]);
    // No temp file is left behind.
    expect((await fsp.readdir(dir)).sort()).toEqual(["1", "config.pbtxt", path.basename(r.backup!)].sort());
    // A second apply within the same second keeps its own backup.
    const again = await applyConfigEditsToFile(file, { maxBatchSize: 4 }, undefined, { now: fixedNow });
    expect(again.backup).toBe(path.join(dir, "config.pbtxt.triton-dev-backup-20261202T014500Z-2.bak"));
    expect(await fsp.readFile(again.backup!, "utf8")).toBe(r.text);
  });

  it("names a backup that the watcher, staging and the content hash skip", async () => {
    const { dir, file } = await modelDir(BASE);
    const r = await applyConfigEditsToFile(file, edits, BASE);
    expect(isIgnoredPath(path.join("m", path.basename(r.backup!)))).toBe(true);
    expect(isIgnoredPath(backupName(file, new Date()))).toBe(true);
    const listed = (await listModelFiles(dir, "m")).map((e) => e.rel);
    expect(listed).toContain("config.pbtxt");
    expect(listed.some((rel) => rel.includes("backup"))).toBe(false);
  });

  it("refuses a file that changed since it was read, and writes nothing", async () => {
    const { dir, file } = await modelDir(BASE);
    await expect(applyConfigEditsToFile(file, edits, BASE.replace("8", "9"))).rejects.toThrow(
      expect.objectContaining({ name: "ConfigEditError", reason: "changed" }),
    );
    expect(await fsp.readFile(file, "utf8")).toBe(BASE);
    expect(await backupsIn(dir)).toEqual([]);
  });

  it("refuses a file that another writer changes while it is being edited, keeping that writer's text", async () => {
    const { file } = await modelDir(BASE);
    const now = () => {
      // The user saves from the editor between our read and our write.
      fs.writeFileSync(file, BASE.replace("8 #", "12 #"));
      return fixedNow();
    };
    await expect(applyConfigEditsToFile(file, edits, BASE, { now })).rejects.toThrow(
      expect.objectContaining({ name: "ConfigEditError", reason: "changed" }),
    );
    expect(await fsp.readFile(file, "utf8")).toBe(BASE.replace("8 #", "12 #"));
  });

  it("writes nothing and keeps no backup when the file already says it", async () => {
    const { dir, file } = await modelDir(BASE);
    const before = await fsp.stat(file);
    const r = await applyConfigEditsToFile(file, { maxBatchSize: 8 }, BASE);
    expect(r).toEqual({ changed: false, backup: undefined, text: BASE });
    expect((await fsp.stat(file)).ino).toBe(before.ino);
    expect(await backupsIn(dir)).toEqual([]);
  });

  it("refuses a config with a syntax error or bytes that are not UTF-8, leaving the file as it was", async () => {
    const { dir, file } = await modelDir("name: 'x\n");
    await expect(applyConfigEditsToFile(file, edits)).rejects.toThrow(
      expect.objectContaining({ reason: "syntax", file, line: 1, column: 7 }),
    );
    const bytes = Buffer.concat([Buffer.from('name: "x"\n# caf'), Buffer.from([0xe9]), Buffer.from("\n")]);
    await fsp.writeFile(file, bytes);
    await expect(applyConfigEditsToFile(file, edits)).rejects.toThrow(
      expect.objectContaining({ reason: "syntax", line: 2, column: 6 }),
    );
    expect((await fsp.readFile(file)).equals(bytes)).toBe(true);
    expect(await backupsIn(dir)).toEqual([]);
    await expect(applyConfigEditsToFile(path.join(dir, "missing.pbtxt"), edits)).rejects.toThrow(
      expect.objectContaining({ reason: "io" }),
    );
  });

  it("writes through a symbolic link to the file it names, so the link stays a link", async () => {
    const { dir, file } = await modelDir("");
    const elsewhere = await fsp.mkdtemp(path.join(os.tmpdir(), "config-edit-target-"));
    temps.push(elsewhere);
    const target = path.join(elsewhere, "shared.pbtxt");
    await fsp.writeFile(target, BASE);
    await fsp.rm(file);
    await fsp.symlink(target, file);
    const r = await applyConfigEditsToFile(file, edits, BASE);
    expect((await fsp.lstat(file)).isSymbolicLink()).toBe(true);
    expect(await fsp.readFile(target, "utf8")).toBe(r.text);
    expect(path.dirname(r.backup!)).toBe(elsewhere);
    expect(await backupsIn(dir)).toEqual([]);
  });
});

describe("the backup and the reload watcher", () => {
  const watchers: RepositoryWatcher[] = [];
  afterEach(async () => {
    for (const w of watchers.splice(0)) await w.close();
  });
  const until = async (cond: () => boolean, ms = 5_000) => {
    const deadline = Date.now() + ms;
    while (!cond() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  };

  it("sees the edited config as one change of the model, and the backup as none", async () => {
    const { repo, file } = await modelDir(BASE);
    const changes: ModelChange[] = [];
    const w = new RepositoryWatcher(repo, { settleMs: 150, completeSettleMs: 60 });
    watchers.push(w);
    w.onChange((c) => changes.push(c));
    await w.start();
    const r = await applyConfigEditsToFile(file, edits, BASE);
    await until(() => changes.length > 0);
    expect(changes.map((c) => c.model)).toEqual(["m"]);
    // Backups coming and going are not edits of the model.
    await fsp.rm(r.backup!);
    await fsp.writeFile(path.join(path.dirname(file), backupName(file, new Date(0))), BASE);
    await new Promise((res) => setTimeout(res, 350));
    expect(changes).toHaveLength(1);
    expect(fs.existsSync(file)).toBe(true);
  });
});
