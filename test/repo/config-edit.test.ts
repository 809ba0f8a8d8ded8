import { describe, expect, it } from "vitest";
import { applyConfigEdits, describeConfigEdits } from "../../src/repo/config-edit.js";

// What tune needs of the editor (the stand-in; the byte-preserving editor has its own tests).
const text = `# header comment
name: "m"
max_batch_size: 8 # the model's limit
instance_group [
  {
    count: 1 # one for now
    kind: KIND_CPU
  }
]
dynamic_batching {
  priority_levels: 2 # keep me
  max_queue_delay_microseconds: 100
}
`;

describe("applyConfigEdits (tune's use)", () => {
  it("sets the named fields and leaves every other line as it was", () => {
    const out = applyConfigEdits(text, {
      maxBatchSize: 16,
      dynamicBatching: { preferredBatchSize: [4, 8], maxQueueDelayMicroseconds: 5000 },
      instanceCounts: [{ kind: "KIND_CPU", count: 2 }],
    });
    expect(out).toContain("max_batch_size: 16 # the model's limit");
    expect(out).toContain("count: 2 # one for now");
    expect(out).toContain("priority_levels: 2 # keep me");
    expect(out).toContain("max_queue_delay_microseconds: 5000");
    expect(out).toContain("preferred_batch_size: [ 4, 8 ]");
    const unchanged = (t: string) =>
      t.split("\n").filter((l) => !/max_batch_size|count:|max_queue_delay|preferred_batch_size/.test(l));
    expect(unchanged(out)).toEqual(unchanged(text));
  });

  it("removes dynamic batching, and adds a group for a kind without one", () => {
    const out = applyConfigEdits(text, { dynamicBatching: false, instanceCounts: [{ kind: "KIND_GPU", count: 1 }] });
    expect(out).not.toContain("dynamic_batching");
    expect(out).toContain("{ count: 1 kind: KIND_GPU }");
    expect(out.startsWith('# header comment\nname: "m"\nmax_batch_size: 8 # the model\'s limit\n')).toBe(true);
  });

  it("describes only the fields that change", () => {
    expect(describeConfigEdits(text, { maxBatchSize: 8, instanceCounts: [{ kind: "KIND_CPU", count: 3 }] })).toEqual([
      { field: "instance_group[KIND_CPU].count", before: "1", after: "3" },
    ]);
  });
});
