import fs from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { UsageError } from "../../src/errors.js";
import { findTopLevelField, removeField, renameConfig, setField } from "../../src/repo/config-edit.js";
import { parseCompareFlag, planVariants } from "../../src/perf/variants.js";
import { SAMPLE_MODELS } from "../helpers/cli.js";

const config = `# top comment with dynamic_batching { in it
name: "image_classifier"
backend: "python"
max_batch_size: 256
input [ { name: "input_1" data_type: TYPE_FP32 dims: [ 3, 224, 224 ] } ]
output [ { name: "predictions" data_type: TYPE_FP32 dims: [ 1000 ] } ]
instance_group [
  {
    count: 1
    kind: KIND_CPU
  }
]
dynamic_batching {
  preferred_batch_size: [ 8, 16 ]   # "}" in a comment
  max_queue_delay_microseconds: 5000
}
parameters { key: "dynamic_batching" value: { string_value: "{" } }
`;

describe("config.pbtxt edits for variants", () => {
  it("finds top-level fields only, skipping strings, comments and nested fields", () => {
    expect(findTopLevelField(config, "dynamic_batching")).toHaveLength(1);
    expect(findTopLevelField(config, "name")).toHaveLength(1);
    expect(findTopLevelField(config, "count")).toHaveLength(0);
  });

  it("removes dynamic_batching and keeps the rest of the file as written", () => {
    const out = removeField(config, "dynamic_batching");
    expect(out).not.toMatch(/^dynamic_batching/m);
    expect(out).toContain("# top comment with dynamic_batching { in it");
    expect(out).toContain('parameters { key: "dynamic_batching" value: { string_value: "{" } }');
    expect(out.replace(/dynamic_batching \{\n[^]*?\n\}\n/, "")).toBe(out);
    expect(config.replace(/dynamic_batching \{\n[^]*?\n\}\n/, "")).toBe(out);
  });

  it("replaces instance_group, adds a missing field, and renames the model", () => {
    const out = setField(config, "instance_group", "instance_group [ { count: 3 kind: KIND_CPU } ]");
    expect(out).toContain("instance_group [ { count: 3 kind: KIND_CPU } ]\ndynamic_batching {");
    expect(setField('name: "m"\n', "dynamic_batching", "dynamic_batching { }")).toBe(
      'name: "m"\n\ndynamic_batching { }\n',
    );
    expect(renameConfig(config, "image_classifier__perf_x")).toContain('name: "image_classifier__perf_x"\nbackend');
    expect(renameConfig('backend: "python"\n', "x")).toBe('name: "x"\nbackend: "python"\n');
  });

  it("plans batching, instances and config comparisons, reusing the original where it matches", async () => {
    const base = {
      name: "image_classifier",
      configText: config,
      config: {
        name: "image_classifier",
        platform: "",
        backend: "python",
        max_batch_size: 256,
        dynamic_batching: { preferred_batch_size: [8], max_queue_delay_microseconds: 5000 },
        instance_group: [{ count: 1, kind: "KIND_CPU" }],
      },
    };
    const batching = await planVariants({ kind: "batching" }, base);
    expect(batching.map((v) => [v.label, v.servedModel, v.configText === undefined])).toEqual([
      ["no batching", "image_classifier__perf_nobatch", false],
      ["dynamic batching", "image_classifier", true],
    ]);
    expect(batching[0]!.configText).not.toMatch(/^dynamic_batching/m);
    const inst = await planVariants({ kind: "instances", counts: [1, 3] }, base);
    expect(inst.map((v) => v.servedModel)).toEqual(["image_classifier", "image_classifier__perf_instances3"]);
    expect(inst[1]!.configText).toContain("instance_group [ { count: 3 kind: KIND_CPU } ]");
    const noBatching = await planVariants(
      { kind: "batching" },
      {
        ...base,
        config: { ...base.config, dynamic_batching: undefined } as never,
        configText: removeField(config, "dynamic_batching"),
      },
    );
    expect(noBatching[1]!.configText).toMatch(/dynamic_batching \{ \}/);
    await expect(
      planVariants({ kind: "batching" }, { ...base, config: { ...base.config, max_batch_size: 0 } }),
    ).rejects.toThrow(UsageError);
    await expect(
      planVariants({ kind: "batching" }, { ...base, config: { ...base.config, platform: "ensemble" } }),
    ).rejects.toThrow(/ensemble/);
    const file = path.join(SAMPLE_MODELS, "image_classifier", "config.pbtxt");
    const cfg = await planVariants({ kind: "config", file }, base);
    expect(cfg[1]!.configText).toContain('name: "image_classifier__perf_config"');
    expect(cfg[1]!.configText).toContain((await fs.readFile(file, "utf8")).split("\n").slice(-3).join("\n"));
  });

  it("parses --compare", () => {
    expect(parseCompareFlag("batching")).toEqual({ kind: "batching" });
    expect(parseCompareFlag("instances=1,3")).toEqual({ kind: "instances", counts: [1, 3] });
    expect(parseCompareFlag("config=a.pbtxt")).toEqual({ kind: "config", file: "a.pbtxt" });
    expect(parseCompareFlag("versions=1,02")).toEqual({ kind: "versions", versions: ["1", "2"] });
    expect(() => parseCompareFlag("instances=2")).toThrow(UsageError);
    for (const bad of ["versions=1", "versions=1,1", "versions=0,1", "versions=a,b"])
      expect(() => parseCompareFlag(bad), bad).toThrow(UsageError);
    expect(() => parseCompareFlag("speed")).toThrow(UsageError);
  });
});
