import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { UsageError } from "../../src/errors.js";
import { InputDataError, parseInputData, readInputData } from "../../src/perf/input-data.js";
import {
  buildPayloads,
  formatShapeList,
  leftOutInputs,
  MissingShapesError,
  parseShapeFlag,
  parseShapeList,
  resolveInputs,
} from "../../src/perf/inputs.js";
import { decodeTensorData } from "../../src/triton/binary.js";

const meta = (inputs: Array<{ name: string; datatype: string; shape: number[] }>) => ({
  name: "m",
  platform: "python",
  inputs,
  outputs: [],
});
const opts = { batchSize: 1, shapes: {}, data: "random" as const, stringLength: 32 };
const catchError = (f: () => unknown): unknown => {
  try {
    f();
  } catch (e) {
    return e;
  }
  return undefined;
};

describe("inputs from model metadata", () => {
  it("drops the batch dimension of a batching model and puts the batch size back", async () => {
    const inputs = resolveInputs(
      meta([{ name: "img", datatype: "FP32", shape: [-1, 3, 4, 4] }]),
      { max_batch_size: 8 },
      { batchSize: 2, shapes: {} },
    );
    expect(inputs).toEqual([{ name: "img", datatype: "FP32", dims: [3, 4, 4], optional: false }]);
    const [payload] = await buildPayloads(inputs, true, { ...opts, batchSize: 2 });
    expect(payload![0]!.shape).toEqual([2, 3, 4, 4]);
    expect(payload![0]!.data.length).toBe(2 * 48 * 4);
    const values = decodeTensorData("FP32", payload![0]!.data) as number[];
    expect(values.every((v) => v >= 0 && v < 1)).toBe(true);
  });

  it("refuses a dynamic dimension without a size, and takes one from --shape", () => {
    const m = meta([{ name: "INPUT0", datatype: "INT32", shape: [-1, -1, 16] }]);
    const err = catchError(() => resolveInputs(m, { max_batch_size: 4 }, { batchSize: 1, shapes: {} }));
    expect(err).toBeInstanceOf(MissingShapesError);
    expect((err as MissingShapesError).inputs).toEqual([{ name: "INPUT0", dims: [-1, 16] }]);
    expect((err as MissingShapesError).hint).toContain("--shape INPUT0:N,16");
    expect(resolveInputs(m, { max_batch_size: 4 }, { batchSize: 1, shapes: { INPUT0: [7, 16] } })[0]!.dims).toEqual([
      7, 16,
    ]);
    expect(() => resolveInputs(m, { max_batch_size: 4 }, { batchSize: 1, shapes: { INPUT0: [7, 15] } })).toThrow(
      UsageError,
    );
    expect(() => resolveInputs(m, { max_batch_size: 4 }, { batchSize: 1, shapes: { OTHER: [1] } })).toThrow(UsageError);
    expect(() => resolveInputs(m, { max_batch_size: 0 }, { batchSize: 2, shapes: { INPUT0: [1, 1, 16] } })).toThrow(
      UsageError,
    );
  });

  it("names every input that needs a shape in one error, leaving optional ones out unless asked", () => {
    // Shaped like Triton's identity test model: one required and several optional [-1,-1] inputs.
    const m = meta([
      { name: "INPUT0", datatype: "FP32", shape: [-1, -1] },
      { name: "INPUT1", datatype: "INT32", shape: [-1, -1] },
      { name: "INPUT2", datatype: "BYTES", shape: [-1, -1] },
      { name: "INPUT3", datatype: "FP32", shape: [-1, 4] },
    ]);
    const config = { max_batch_size: 0 };
    const all = catchError(() => resolveInputs(m, config, { batchSize: 1, shapes: {} })) as MissingShapesError;
    expect(all).toBeInstanceOf(MissingShapesError);
    expect(all.inputs.map((i) => i.name)).toEqual(["INPUT0", "INPUT1", "INPUT2", "INPUT3"]);
    const optional = new Set(["INPUT1", "INPUT2", "INPUT3"]);
    const req = catchError(() =>
      resolveInputs(m, config, { batchSize: 1, shapes: {}, optional }),
    ) as MissingShapesError;
    expect(req.inputs).toEqual([{ name: "INPUT0", dims: [-1, -1] }]);
    const r = resolveInputs(m, config, { batchSize: 1, shapes: { INPUT0: [2, 3], INPUT2: [1, 1] }, optional });
    expect(r.map((i) => [i.name, i.dims, i.optional])).toEqual([
      ["INPUT0", [2, 3], false],
      ["INPUT2", [1, 1], true],
    ]);
    expect(leftOutInputs(m, r)).toEqual(["INPUT1", "INPUT3"]);
    // Asked by a data file: an input a step names is sent, sized by the step's shape.
    const steps = parseInputData(
      JSON.stringify({
        data: [{ INPUT0: { content: [1, 2], shape: [1, 2] }, INPUT3: { content: [1, 2, 3, 4], shape: [1, 4] } }],
      }),
      "d.json",
    );
    expect(resolveInputs(m, config, { batchSize: 1, shapes: {}, optional, steps }).map((i) => i.name)).toEqual([
      "INPUT0",
      "INPUT3",
    ]);
    const allOptional = new Set(["INPUT0", ...optional]);
    expect(() => resolveInputs(m, config, { batchSize: 1, shapes: {}, optional: allOptional })).toThrow(UsageError);
  });

  it("synthesises text for BYTES and 0/1 for integers, the same on every run", async () => {
    const inputs = resolveInputs(
      meta([
        { name: "t", datatype: "BYTES", shape: [-1, 1] },
        { name: "mask", datatype: "INT64", shape: [-1, 8] },
      ]),
      { max_batch_size: 4 },
      { batchSize: 1, shapes: {} },
    );
    const a = await buildPayloads(inputs, true, opts);
    const b = await buildPayloads(inputs, true, opts);
    expect(a.map((p) => p.map((t) => t.data.toString("hex")))).toEqual(
      b.map((p) => p.map((t) => t.data.toString("hex"))),
    );
    const text = decodeTensorData("BYTES", a[0]![0]!.data) as string[];
    expect(text[0]).toMatch(/^[a-z ]{1,32}$/);
    expect((decodeTensorData("INT64", a[0]![1]!.data) as bigint[]).every((v) => v === 0n || v === 1n)).toBe(true);
    const zeros = await buildPayloads(inputs, true, { ...opts, data: "zero" });
    expect(zeros).toHaveLength(1);
    expect(zeros[0]![1]!.data.every((x) => x === 0)).toBe(true);
  });

  it("reads perf_analyzer's --input-data JSON, one request per step, replicated over the batch", async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "triton-dev-inputs-"));
    const file = path.join(dir, "data.json");
    const x = {
      content: [
        [1, 2],
        [3, 4],
      ],
      shape: [2, 2],
    };
    await fs.writeFile(
      file,
      JSON.stringify({
        data: [
          { t: ["hello"], x },
          { t: ["bye"], x: [5, 6, 7, 8] },
        ],
      }),
    );
    const m = meta([
      { name: "t", datatype: "BYTES", shape: [-1, 1] },
      { name: "x", datatype: "FP32", shape: [-1, 2, 2] },
    ]);
    const inputs = resolveInputs(m, { max_batch_size: 4 }, { batchSize: 2, shapes: {} });
    const p = await buildPayloads(inputs, true, { ...opts, batchSize: 2, data: await readInputData(file) });
    expect(p).toHaveLength(2);
    expect(decodeTensorData("BYTES", p[0]![0]!.data)).toEqual(["hello", "hello"]);
    expect(p[1]![1]!.shape).toEqual([2, 2, 2]);
    expect(decodeTensorData("FP32", p[1]![1]!.data)).toEqual([5, 6, 7, 8, 5, 6, 7, 8]);
    await fs.writeFile(file, JSON.stringify({ data: [{ t: ["a"], x: [1, 2, 3] }] }));
    const few = await buildPayloads(inputs, true, { ...opts, data: await readInputData(file) }).catch(
      (e: unknown) => e,
    );
    expect(few).toBeInstanceOf(InputDataError);
    expect([(few as InputDataError).step, (few as InputDataError).input]).toEqual([1, "x"]);
    await fs.writeFile(file, JSON.stringify({ data: [{ t: ["a"], x: [1, 2, 3, 4] }, { t: ["a"] }] }));
    const none = await buildPayloads(inputs, true, { ...opts, data: await readInputData(file) }).catch(
      (e: unknown) => e,
    );
    expect(none).toBeInstanceOf(InputDataError);
    expect([(none as InputDataError).step, (none as InputDataError).input]).toEqual([2, "x"]);
    await fs.rm(dir, { recursive: true });
  });

  it("sizes dynamic inputs from each step's shape, and refuses a step whose shape does not fit", async () => {
    const m = meta([
      { name: "a", datatype: "FP32", shape: [-1, -1] },
      { name: "s", datatype: "BYTES", shape: [-1] },
      { name: "i", datatype: "INT32", shape: [-1, 2] },
    ]);
    const i32 = Buffer.from(new Int32Array([7, 8, 9, 10]).buffer).toString("base64");
    const steps = parseInputData(
      JSON.stringify({
        data: [
          { a: { content: [1, 2, 3, 4, 5, 6], shape: [2, 3] }, s: { b64: Buffer.from("héllo").toString("base64") } },
          {
            a: { content: [1], shape: [1, 1] },
            s: { content: ["x", "y"], shape: [2] },
            i: { b64: i32, shape: [2, 2] },
          },
        ],
      }),
      "d.json",
    );
    const optional = new Set(["i"]);
    const inputs = resolveInputs(m, { max_batch_size: 0 }, { batchSize: 1, shapes: {}, steps, optional });
    const p = await buildPayloads(inputs, false, { ...opts, data: { file: "d.json", steps } });
    expect(p[0]!.map((t) => [t.name, t.shape])).toEqual([
      ["a", [2, 3]],
      ["s", [1]],
    ]);
    expect(decodeTensorData("BYTES", p[0]![1]!.data)).toEqual(["héllo"]);
    expect(p[1]!.map((t) => [t.name, t.shape])).toEqual([
      ["a", [1, 1]],
      ["s", [2]],
      ["i", [2, 2]],
    ]);
    expect(decodeTensorData("INT32", p[1]![2]!.data)).toEqual([7, 8, 9, 10]);

    const fails = async (step: object, input: string) => {
      const data = { file: "d.json", steps: parseInputData(JSON.stringify({ data: [step] }), "d.json") };
      const e = await buildPayloads(inputs, false, { ...opts, data }).catch((x: unknown) => x);
      expect(e, JSON.stringify(step)).toBeInstanceOf(InputDataError);
      expect([(e as InputDataError).step, (e as InputDataError).input]).toEqual([1, input]);
    };
    const a = { content: [1], shape: [1, 1] };
    const x = { content: ["x"], shape: [1] };
    await fails({ a: { content: [1, 2], shape: [2] }, s: x }, "a"); // one dimension of two
    await fails({ a: { content: [1, 2], shape: [1, 1] }, s: x }, "a"); // two values for one
    await fails({ a, s: x, i: { content: [1, 2, 3], shape: [1, 3] } }, "i"); // fixed 2 given as 3
    await fails({ a, s: x, i: { b64: "AAAA", shape: [1, 2] } }, "i"); // 3 bytes for 8
    await fails({ a, s: { b64: "AAAA", shape: [2] } }, "s"); // one BYTES element for two
    await fails({ a, s: x, zz: [1] }, "zz"); // not an input
    await fails({ a, s: ["x"] }, "s"); // this step gives no shape for [-1]
    // A step without a shape for a [-1,-1] input leaves it unsized: refused before any request.
    const unsized = parseInputData(JSON.stringify({ data: [{ a: [1], s: ["x"] }] }), "d.json");
    expect(
      catchError(() => resolveInputs(m, { max_batch_size: 0 }, { batchSize: 1, shapes: {}, steps: unsized, optional })),
    ).toBeInstanceOf(MissingShapesError);
  });

  it("parses --shape NAME:d1,d2 and the prompt's NAME=d1xd2 with one parser", () => {
    expect(parseShapeFlag("INPUT0:3,224,224")).toEqual(["INPUT0", [3, 224, 224]]);
    expect(parseShapeFlag("ns:in:2")).toEqual(["ns:in", [2]]);
    expect(parseShapeFlag("INPUT0=2x3")).toEqual(["INPUT0", [2, 3]]);
    expect(() => parseShapeFlag("INPUT0")).toThrow(UsageError);
    expect(() => parseShapeFlag("INPUT0:3,-1")).toThrow(UsageError);
    expect(() => parseShapeFlag("INPUT0=2x0")).toThrow(UsageError);
    expect(parseShapeList("  a=2x3   b=4 c:1,2 ")).toEqual({ a: [2, 3], b: [4], c: [1, 2] });
    expect(formatShapeList({ a: [2, 3], b: [4] })).toBe("a=2x3 b=4");
    expect(parseShapeList(formatShapeList({ a: [2, 3], b: [4] }))).toEqual({ a: [2, 3], b: [4] });
    expect(() => parseShapeList("a=2x3 b=")).toThrow(UsageError);
  });
});
