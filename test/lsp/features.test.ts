import { describe, expect, it } from "vitest";
import { type ModelSource, complete } from "../../src/lsp/features.js";

const alone: ModelSource = {
  self: "m",
  names: () => Array.from({ length: 500 }, (_, i) => `model_${i}`),
  config: () => undefined,
  layout: () => undefined,
  runs: () => undefined,
  tensors: async () => undefined,
};
const labels = async (text: string, offset = text.length) =>
  (await complete(text, offset, alone, { snippets: false })).map((c) => c.label);

describe("completion", () => {
  it("offers no field names inside a comment, a space after `#` included", async () => {
    expect(await labels('name: "m"\n# foo ')).toEqual([]);
    expect(await labels('name: "m"  # a note: ')).toEqual([]);
    // A '#' inside a string starts no comment.
    expect(await labels('name: "a#b"\n')).toContain("max_batch_size");
  });

  it("offers no field names inside a string", async () => {
    expect(await labels('name: "m"\nparameters { key: "a b ')).toEqual([]);
  });

  it("offers data types without TYPE_INVALID, which lint refuses", async () => {
    const types = await labels('input [ { name: "x" data_type: ');
    expect(types).toContain("TYPE_FP32");
    expect(types).not.toContain("TYPE_INVALID");
  });

  it("holds at most 100 model names, those containing what is typed first", async () => {
    const text = 'platform: "ensemble"\nensemble_scheduling { step [ { model_name: "';
    expect(await labels(text)).toHaveLength(100);
    const typed = await labels(`${text}l_49`);
    expect(typed[0]).toBe("model_49");
    expect(typed.every((l) => l.includes("l_49"))).toBe(true);
  });

  it("offers no other member of a oneof once one is set", async () => {
    const policy = await labels("version_policy { latest { } ");
    expect(policy).not.toContain("all");
    expect(policy).not.toContain("specific");
    expect(await labels("version_policy { ")).toEqual(expect.arrayContaining(["latest", "all", "specific"]));
    const top = await labels("dynamic_batching { }\n");
    expect(top).not.toContain("sequence_batching");
    expect(top).not.toContain("ensemble_scheduling");
    expect(top).toContain("instance_group");
  });
});
