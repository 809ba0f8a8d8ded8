import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { UsageError, UserError } from "../../src/errors.js";
import { buildPayloads, parseShapeFlag, resolveInputs } from "../../src/perf/inputs.js";
import { decodeTensorData } from "../../src/triton/binary.js";

const meta = (inputs: Array<{ name: string; datatype: string; shape: number[] }>) => ({
  name: "m",
  platform: "python",
  inputs,
  outputs: [],
});
const opts = { batchSize: 1, shapes: {}, data: "random" as const, stringLength: 32 };

describe("inputs from model metadata", () => {
  it("drops the batch dimension of a batching model and puts the batch size back", async () => {
    const inputs = resolveInputs(
      meta([{ name: "img", datatype: "FP32", shape: [-1, 3, 4, 4] }]),
      { max_batch_size: 8 },
      { batchSize: 2, shapes: {} },
    );
    expect(inputs).toEqual([{ name: "img", datatype: "FP32", dims: [3, 4, 4] }]);
    const [payload] = await buildPayloads(inputs, true, { ...opts, batchSize: 2 });
    expect(payload![0]!.shape).toEqual([2, 3, 4, 4]);
    expect(payload![0]!.data.length).toBe(2 * 48 * 4);
    const values = decodeTensorData("FP32", payload![0]!.data) as number[];
    expect(values.every((v) => v >= 0 && v < 1)).toBe(true);
  });

  it("refuses a dynamic dimension without --shape, as perf_analyzer does, and takes it with one", () => {
    const m = meta([{ name: "INPUT0", datatype: "INT32", shape: [-1, -1, 16] }]);
    const err = (() => {
      try {
        resolveInputs(m, { max_batch_size: 4 }, { batchSize: 1, shapes: {} });
      } catch (e) {
        return e as UsageError;
      }
    })();
    expect(err).toBeInstanceOf(UsageError);
    expect(err!.message).toBe(
      "input INPUT0 contains dynamic shape [-1,16], provide shapes to send along with the request",
    );
    expect(err!.hint).toContain("--shape INPUT0:N,16");
    expect(resolveInputs(m, { max_batch_size: 4 }, { batchSize: 1, shapes: { INPUT0: [7, 16] } })[0]!.dims).toEqual([
      7, 16,
    ]);
    expect(() => resolveInputs(m, { max_batch_size: 4 }, { batchSize: 1, shapes: { INPUT0: [7, 15] } })).toThrow(
      /does not fit/,
    );
    expect(() => resolveInputs(m, { max_batch_size: 4 }, { batchSize: 1, shapes: { OTHER: [1] } })).toThrow(
      /not an input/,
    );
    expect(() => resolveInputs(m, { max_batch_size: 0 }, { batchSize: 2, shapes: { INPUT0: [1, 1, 16] } })).toThrow(
      /does not support batching/,
    );
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

  it("reads perf_analyzer's --input-data JSON, one request per entry, replicated over the batch", async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "triton-dev-inputs-"));
    const file = path.join(dir, "data.json");
    await fs.writeFile(
      file,
      JSON.stringify({
        data: [
          {
            t: ["hello"],
            x: {
              content: [
                [1, 2],
                [3, 4],
              ],
              shape: [2, 2],
            },
          },
          { t: ["bye"], x: [5, 6, 7, 8] },
        ],
      }),
    );
    const inputs = resolveInputs(
      meta([
        { name: "t", datatype: "BYTES", shape: [-1, 1] },
        { name: "x", datatype: "FP32", shape: [-1, 2, 2] },
      ]),
      { max_batch_size: 4 },
      { batchSize: 2, shapes: {} },
    );
    const p = await buildPayloads(inputs, true, { ...opts, batchSize: 2, data: { file } });
    expect(p).toHaveLength(2);
    expect(decodeTensorData("BYTES", p[0]![0]!.data)).toEqual(["hello", "hello"]);
    expect(p[1]![1]!.shape).toEqual([2, 2, 2]);
    expect(decodeTensorData("FP32", p[1]![1]!.data)).toEqual([5, 6, 7, 8, 5, 6, 7, 8]);
    await fs.writeFile(file, JSON.stringify({ data: [{ t: ["a"], x: [1, 2, 3] }] }));
    await expect(buildPayloads(inputs, true, { ...opts, data: { file } })).rejects.toThrow(
      /x has 3 element\(s\) but shape \[2,2\] needs 4/,
    );
    await fs.writeFile(file, JSON.stringify({ data: [{ t: ["a"] }] }));
    await expect(buildPayloads(inputs, true, { ...opts, data: { file } })).rejects.toThrow(UserError);
    await fs.rm(dir, { recursive: true });
  });

  it("parses --shape NAME:d1,d2", () => {
    expect(parseShapeFlag("INPUT0:3,224,224")).toEqual(["INPUT0", [3, 224, 224]]);
    expect(parseShapeFlag("ns:in:2")).toEqual(["ns:in", [2]]);
    expect(() => parseShapeFlag("INPUT0")).toThrow(UsageError);
    expect(() => parseShapeFlag("INPUT0:3,-1")).toThrow(UsageError);
  });
});
