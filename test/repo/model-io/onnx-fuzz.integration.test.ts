/**
 * Fuzzing the ONNX reader with fast-check, like the config parser (parse-fuzz.integration): real
 * models written by the onnx package, truncated, with bytes flipped, inserted and overwritten by
 * huge varints, never make readOnnxModel throw anything but an OnnxReadError, nor read more than
 * a bounded few chunks; whenever protobuf's own parser (the onnx package's ModelProto, in one
 * Python process for the whole batch) reads a mutated file, the reader reads it too and lists the
 * same inputs (initializers left out) and outputs. Lint on a repository of mutated models never
 * throws. Huge declared sizes, in small files and in a sparse 3 GiB one, are refused without
 * allocating them. Set FUZZ_RUNS to scale the number of runs (default 1).
 */
import { execFileSync } from "node:child_process";
import fsp from "node:fs/promises";
import path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lintRepository } from "../../../src/repo/lint.js";
import { OnnxReadError, readOnnxModel } from "../../../src/repo/model-io/onnx.js";
import { testToolsPython } from "../../helpers/test-tools.js";
import { ECHO_IO, removeTempRepos, tempRepo, writeFiles } from "../helpers.js";
import { makeOnnxModels } from "./onnx-models.js";

const SCALE = Number(process.env.FUZZ_RUNS ?? 1) || 1;
const runs = (n: number): number => Math.max(1, Math.round(n * SCALE));

let models: Awaited<ReturnType<typeof makeOnnxModels>>;
let seeds: Uint8Array[];
beforeAll(async () => {
  models = await makeOnnxModels();
  seeds = await Promise.all(
    ["add.onnx", "types.onnx", "shapes.onnx", "sequence.onnx", "external.onnx", "fixed.onnx"].map((f) =>
      fsp.readFile(models.file(f)),
    ),
  );
}, 60_000);
afterAll(async () => {
  await models?.remove();
  await removeTempRepos();
});

type Mutation =
  | { kind: "truncate"; at: number }
  | { kind: "flip"; at: number; byte: number }
  | { kind: "insert"; at: number; bytes: number[] }
  | { kind: "huge"; at: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("flip" as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
  fc.record({
    kind: fc.constant("insert" as const),
    at: fc.nat(),
    bytes: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 12 }),
  }),
  fc.record({ kind: fc.constant("huge" as const), at: fc.nat() }),
);

function mutate(seed: Uint8Array, ms: readonly Mutation[]): Uint8Array {
  let b = Buffer.from(seed);
  for (const m of ms) {
    const at = b.length === 0 ? 0 : m.at % b.length;
    if (m.kind === "truncate") b = b.subarray(0, at);
    else if (m.kind === "flip") b[at] = m.byte;
    else if (m.kind === "insert") b = Buffer.concat([b.subarray(0, at), Buffer.from(m.bytes), b.subarray(at)]);
    // A 9-byte varint of about 2^62 where a length may sit.
    else
      b = Buffer.concat([
        b.subarray(0, at),
        Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x3f]),
        b.subarray(at + 1),
      ]);
  }
  return b;
}

/** What protobuf's parser (the onnx package) makes of each file: the graph's inputs minus initializers, and outputs. */
function pythonReads(files: readonly string[]): Array<{ inputs: string[]; outputs: string[] } | null> {
  const script = `
import json, sys, onnx
# A proto2 string that is not UTF-8 comes back as bytes; the reader decodes it as WHATWG does.
name = lambda n: n if isinstance(n, str) else n.decode("utf-8", "replace")
out = []
for f in sys.argv[1:]:
    m = onnx.ModelProto()
    try:
        m.ParseFromString(open(f, "rb").read())
    except Exception:
        out.append(None)
        continue
    if not m.HasField("graph"):
        out.append(None)
        continue
    inits = {name(t.name) for t in m.graph.initializer}
    ins = [name(i.name) for i in m.graph.input]
    out.append({"inputs": [i for i in ins if i not in inits], "outputs": [name(o.name) for o in m.graph.output]})
print(json.dumps(out))
`;
  return JSON.parse(
    execFileSync(testToolsPython(), ["-c", script, ...files], { encoding: "utf8", maxBuffer: 64 << 20 }),
  ) as Array<{
    inputs: string[];
    outputs: string[];
  } | null>;
}

describe("readOnnxModel under fuzzing", () => {
  it("throws only OnnxReadError, reads a bounded amount, and reads what protobuf's parser reads", async () => {
    const cases = fc.sample(
      fc.record({ seed: fc.nat(), ms: fc.array(mutation, { minLength: 1, maxLength: 4 }) }),
      runs(300),
    );
    const dir = path.join(models.dir, "fuzz");
    await fsp.mkdir(dir, { recursive: true });
    const files: string[] = [];
    for (const [i, c] of cases.entries()) {
      const f = path.join(dir, `${i}.onnx`);
      await fsp.writeFile(f, mutate(seeds[c.seed % seeds.length]!, c.ms));
      files.push(f);
    }
    const theirs = pythonReads(files);
    let agreed = 0;
    for (const [i, f] of files.entries()) {
      const size = (await fsp.stat(f)).size;
      const ours = await readOnnxModel(f).catch((e: unknown) => {
        if (!(e instanceof OnnxReadError)) throw e;
        return e;
      });
      if (!(ours instanceof OnnxReadError)) expect(ours.bytesRead).toBeLessThanOrEqual(size + 64 * 1024);
      const t = theirs[i];
      if (t) {
        // protobuf read it: so must we, with the same tensors.
        expect(ours, `${f}: ${ours instanceof Error ? ours.message : ""}`).not.toBeInstanceOf(OnnxReadError);
        if (!(ours instanceof OnnxReadError)) {
          expect(ours.inputs.map((x) => x.name)).toEqual(t.inputs);
          expect(ours.outputs.map((x) => x.name)).toEqual(t.outputs);
          agreed++;
        }
      }
    }
    // The mutations leave some files readable: the comparison above is not empty.
    expect(agreed).toBeGreaterThan(0);
  }, 120_000);

  it("lint on a repository of mutated models never throws, and what it says points at the model's files", async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.array(mutation, { minLength: 1, maxLength: 3 }), async (seed, ms) => {
        const repo = await tempRepo();
        await writeFiles(repo, {
          "m/config.pbtxt": `name: "m"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\n${ECHO_IO}`,
          "m/1/model.onnx": mutate(seeds[seed % seeds.length]!, ms),
        });
        const r = await lintRepository(repo);
        for (const d of r.diagnostics) expect(d.file.startsWith(repo)).toBe(true);
      }),
      { numRuns: runs(60) },
    );
  }, 120_000);

  it("refuses huge declared sizes without allocating them, in small files and in a sparse 3 GiB one", async () => {
    const problem = async (bytes: Uint8Array | { sparse: number; head: Uint8Array }) => {
      const f = path.join(models.dir, `huge-${Math.random().toString(36).slice(2)}.onnx`);
      if (bytes instanceof Uint8Array) await fsp.writeFile(f, bytes);
      else {
        await fsp.writeFile(f, bytes.head);
        await fsp.truncate(f, bytes.sparse);
      }
      try {
        return await readOnnxModel(f).then(
          () => "read",
          (e: unknown) => (e instanceof OnnxReadError ? e.problem : `other: ${String(e)}`),
        );
      } finally {
        await fsp.rm(f);
      }
    };
    const varint = (n: bigint) => {
      const out: number[] = [];
      do {
        let b = Number(n & 0x7fn);
        n >>= 7n;
        if (n > 0n) b |= 0x80;
        out.push(b);
      } while (n > 0n);
      return out;
    };
    // graph (field 7) of 2^62 bytes.
    expect(await problem(Uint8Array.from([0x3a, ...varint(1n << 62n)]))).toBe("truncated");
    // A graph holding an input (field 11) declared 2^40 bytes.
    expect(await problem(Uint8Array.from([0x3a, 0x08, 0x5a, ...varint(1n << 40n), 0, 0]))).toBe("truncated");
    // A 3 GiB sparse file: a graph of 3 GiB - 6 bytes holding one input of 512 MiB, which is there (zeros).
    const total = 3 * 1024 ** 3;
    const inputLen = 512 * 1024 ** 2;
    const graphLen = BigInt(total - 6);
    const head = Uint8Array.from([0x3a, ...varint(graphLen), 0x5a, ...varint(BigInt(inputLen))]);
    const before = process.memoryUsage().rss;
    expect(await problem({ sparse: total, head })).toBe("too-large");
    expect(process.memoryUsage().rss - before).toBeLessThan(256 * 1024 ** 2);
  }, 60_000);
});
