import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { UserError } from "../../src/errors.js";
import { InputDataError, parseInputData, readInputData } from "../../src/perf/input-data.js";

const parse = (json: unknown) => parseInputData(typeof json === "string" ? json : JSON.stringify(json), "in.json");
const refusal = (json: unknown): InputDataError => {
  try {
    parse(json);
  } catch (e) {
    expect(e).toBeInstanceOf(InputDataError);
    return e as InputDataError;
  }
  throw new Error("parsed");
};

describe("perf_analyzer's --input-data JSON", () => {
  it("takes flat and nested arrays, content with shape, and b64, step by step", () => {
    const steps = parse({
      data: [
        {
          A: [1, 2, 3],
          B: {
            content: [
              [1, 2],
              [3, 4],
            ],
            shape: [2, 2],
          },
        },
        { A: [[4], [5], [6]], S: { b64: Buffer.from("hi").toString("base64") } },
      ],
    });
    expect(steps).toHaveLength(2);
    expect(steps[0]!.get("A")).toEqual({ content: [1, 2, 3] });
    expect(steps[0]!.get("B")).toEqual({ content: [1, 2, 3, 4], shape: [2, 2] });
    expect(steps[1]!.get("A")).toEqual({ content: [4, 5, 6] });
    expect(steps[1]!.get("S")!.b64!.toString()).toBe("hi");
    expect(steps[1]!.has("B")).toBe(false);
  });

  it("refuses bad shapes and values, naming the step and the input", () => {
    const cases: Array<[unknown, number, string]> = [
      [{ data: [{ A: [1] }, { A: { content: [1, 2], shape: [2, -1] } }] }, 2, "A"],
      [{ data: [{ A: { content: [1], shape: [1.5] } }] }, 1, "A"],
      [{ data: [{ A: { content: [1], shape: "2x3" } }] }, 1, "A"],
      [{ data: [{ A: [1] }, { A: [1], B: { shape: [1] } }] }, 2, "B"],
      [{ data: [{ A: 3 }] }, 1, "A"],
      [{ data: [{ A: { b64: "not base64!" } }] }, 1, "A"],
    ];
    for (const [json, step, input] of cases) {
      const e = refusal(json);
      expect([e.step, e.input, e.file]).toEqual([step, input, "in.json"]);
      expect(e.message).toContain(`step ${step}, input ${input}`);
    }
  });

  it("refuses a file that is not perf_analyzer's form at all", () => {
    for (const json of ["{", { data: [] }, { steps: [{}] }, { data: [[1, 2]] }]) {
      const e = refusal(json);
      expect(e.hint).toContain('{"data"');
    }
    expect(refusal({ data: [{ A: [1] }, 7] }).step).toBe(2);
  });

  it("says which file it could not read", async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "triton-dev-input-data-"));
    const missing = path.join(dir, "nope.json");
    const e = await readInputData(missing).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(UserError);
    expect((e as UserError).message).toContain(missing);
    expect((e as UserError).cause).toBeDefined();
    await fs.writeFile(path.join(dir, "ok.json"), JSON.stringify({ data: [{ A: [1] }] }));
    expect((await readInputData(path.join(dir, "ok.json"))).steps).toHaveLength(1);
    await fs.rm(dir, { recursive: true });
  });
});
