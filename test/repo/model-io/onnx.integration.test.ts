import fsp from "node:fs/promises";
import path from "node:path";
import type { DescMessage } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { file_onnx } from "../../../src/repo/gen/onnx_pb.js";
import { OnnxReadError, readOnnxModel } from "../../../src/repo/model-io/onnx.js";
import { makeOnnxModels, onnxPackageFields } from "./onnx-models.js";

let models: Awaited<ReturnType<typeof makeOnnxModels>>;
beforeAll(async () => {
  models = await makeOnnxModels();
}, 60_000);
afterAll(() => models?.remove());

const brief = (ts: ReadonlyArray<{ name: string; dataType?: string; fileType: string; dims?: number[] }>) =>
  ts.map((t) => `${t.name} ${t.dataType ?? t.fileType} ${t.dims ? `[${t.dims.join(",")}]` : "(no shape)"}`);

describe("the onnx.proto subset", () => {
  it("has onnx's field numbers, message by message", () => {
    const ours = new Map<string, number>();
    const visit = (m: DescMessage, prefix: string) => {
      for (const f of m.fields) ours.set(`${prefix}${m.name}.${f.name}`, f.number);
      for (const n of m.nestedMessages) visit(n, `${prefix}${m.name}.`);
    };
    for (const m of file_onnx.messages) visit(m, "");
    const theirs = onnxPackageFields([...new Set([...ours.keys()].map((k) => k.slice(0, k.lastIndexOf("."))))]);
    for (const [field, number] of ours) expect(`${field} ${theirs.get(field)}`).toBe(`${field} ${number}`);
  });
});

describe("readOnnxModel", () => {
  it("lists the graph's inputs and outputs, leaving out inputs that are initializers, as onnxruntime does", async () => {
    const info = await readOnnxModel(models.file("add.onnx"));
    expect(brief(info.inputs)).toEqual(["INPUT0 TYPE_FP32 [-1,4]"]);
    expect(brief(info.outputs)).toEqual(["OUTPUT0 TYPE_FP32 [-1,4]"]);
    expect(info.irVersion).toBe(8);
  });

  it("gives each ONNX element type Triton's name, and none where Triton has none", async () => {
    const info = await readOnnxModel(models.file("types.onnx"));
    expect(brief(info.inputs)).toEqual([
      "in_f32 TYPE_FP32 [-1]",
      "in_i64 TYPE_INT64 [-1]",
      "in_str TYPE_STRING [-1]",
      "in_bool TYPE_BOOL [-1]",
      "in_f16 TYPE_FP16 [-1]",
      "in_f64 TYPE_FP64 [-1]",
      "in_bf16 TYPE_BF16 [-1]",
      "in_u8 TYPE_UINT8 [-1]",
      "in_i32 TYPE_INT32 [-1]",
      "in_c64 COMPLEX64 [-1]",
    ]);
  });

  it("tells a scalar (shape []) from a tensor with no shape, and a sequence from a tensor", async () => {
    expect(brief((await readOnnxModel(models.file("shapes.onnx"))).inputs)).toEqual([
      "scalar TYPE_FP32 []",
      "unshaped TYPE_FP32 (no shape)",
    ]);
    expect(brief((await readOnnxModel(models.file("sequence.onnx"))).inputs)).toEqual(["seq not a tensor (no shape)"]);
  });

  it("names the external data files of an external-data model", async () => {
    const info = await readOnnxModel(models.file("external.onnx"));
    expect(brief(info.inputs)).toEqual(["INPUT0 TYPE_FP32 [-1,4]"]);
    expect(info.externalData).toEqual([{ tensor: "W", location: "external.bin", offset: 0, length: 16 }]);
  });

  it("skips an initializer's data without reading it: a 32 MiB model costs two 64 KiB reads", async () => {
    const file = models.file("inline32m.onnx");
    expect((await fsp.stat(file)).size).toBeGreaterThan(32 * 1024 * 1024);
    const info = await readOnnxModel(file);
    expect(brief(info.inputs)).toEqual(["INPUT0 TYPE_FP32 [-1,4]"]);
    expect(info.bytesRead).toBeLessThanOrEqual(2 * 64 * 1024);
  });

  it("refuses a truncated file, one that is not protobuf and one with no graph, saying which", async () => {
    const whole = await fsp.readFile(models.file("add.onnx"));
    const write = async (name: string, bytes: Uint8Array) => {
      const f = path.join(models.dir, name);
      await fsp.writeFile(f, bytes);
      return f;
    };
    const problem = (f: string) =>
      readOnnxModel(f).then(
        () => "read",
        (e: unknown) => (e instanceof OnnxReadError ? e.problem : `other ${String(e)}`),
      );
    expect(await problem(await write("cut.onnx", whole.subarray(0, whole.length - 10)))).toBe("truncated");
    expect(await problem(await write("text.onnx", Buffer.from("onnx")))).toBe("corrupt");
    expect(await problem(await write("empty.onnx", new Uint8Array()))).toBe("no-graph");
    // A graph field declaring 2^40 bytes in a 6-byte file.
    expect(await problem(await write("huge.onnx", Uint8Array.from([0x3a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20])))).toBe(
      "truncated",
    );
    expect(await problem(path.join(models.dir, "absent.onnx"))).toBe("unreadable");
  });
});
