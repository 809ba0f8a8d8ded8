import { describe, expect, it } from "vitest";
import { UsageError, UserError } from "../../src/errors.js";
import {
  applySpaceFile,
  defaultSpace,
  editsBetween,
  spaceSize,
  allCandidates,
  startingPoint,
  withStart,
  type Candidate,
} from "../../src/tune/space.js";
import type { ModelConfigSummary } from "../../src/triton/grpc-client.js";

const batched: ModelConfigSummary = {
  name: "m",
  platform: "",
  backend: "python",
  max_batch_size: 32,
  dynamic_batching: { preferred_batch_size: [8, 16], max_queue_delay_microseconds: 5000 },
  instance_group: [{ count: 2, kind: "KIND_CPU" }],
};
const unbatched: ModelConfigSummary = { ...batched, max_batch_size: 0, dynamic_batching: undefined };

describe("the search space", () => {
  it("comes from the config and the machine: batching within max_batch_size, instances up to the cores", () => {
    const s = defaultSpace(batched, { cores: 4, gpus: 0 });
    expect(s.kind).toBe("KIND_CPU");
    expect(s.batching).toEqual([false, true]);
    expect(Math.max(...s.maxBatchSize)).toBe(32);
    expect(s.preferredBatchSize.flat().every((p) => p <= 32)).toBe(true);
    expect(s.preferredBatchSize).toContainEqual([8, 16]);
    expect(s.maxQueueDelayMicroseconds).toContain(5000);
    expect(s.instances).toEqual([1, 2, 3, 4]);
    expect(spaceSize(s)).toBe(allCandidates(s).length);
  });

  it("searches GPU instances where the model's group is on a GPU and there is one", () => {
    const gpu = { ...batched, instance_group: [{ count: 1, kind: "KIND_GPU" }] };
    expect(defaultSpace(gpu, { cores: 16, gpus: 2 })).toMatchObject({
      kind: "KIND_GPU",
      instances: [1, 2, 3, 4, 5, 6, 7, 8],
    });
    expect(defaultSpace(gpu, { cores: 2, gpus: 0 }).kind).toBe("KIND_CPU");
  });

  it("leaves batching out for a model with max_batch_size 0", () => {
    const s = defaultSpace(unbatched, { cores: 2, gpus: 0 });
    expect(s.batching).toEqual([false]);
    expect(allCandidates(s).every((c) => !c.batching && c.maxBatchSize === 0)).toBe(true);
    expect(() => applySpaceFile(s, { batching: [true] }, "space.json", unbatched)).toThrow(UsageError);
  });

  it("starts at the user's values, which are always in the space", () => {
    const start = startingPoint(batched, "KIND_CPU");
    expect(start).toEqual({
      batching: true,
      maxBatchSize: 32,
      preferredBatchSize: [8, 16],
      maxQueueDelayMicroseconds: 5000,
      instances: 2,
    });
    const narrowed = withStart(
      applySpaceFile(defaultSpace(batched, { cores: 2, gpus: 0 }), { instances: [1] }, "f", batched),
      start,
    );
    expect(narrowed.instances).toEqual([1, 2]);
  });

  it("--space narrows or widens the dimensions it names, and names the file and key when wrong", () => {
    const s = applySpaceFile(
      defaultSpace(batched, { cores: 2, gpus: 0 }),
      { instances: [1, 6], maxQueueDelayMicroseconds: [0, 20000], preferredBatchSize: [[], [4, 2]] },
      "space.json",
      batched,
    );
    expect(s.instances).toEqual([1, 6]);
    expect(s.maxQueueDelayMicroseconds).toEqual([0, 20000]);
    expect(s.preferredBatchSize).toEqual([[], [2, 4]]);
    for (const bad of [{ instances: [0] }, { nope: [1] }, { preferredBatchSize: [[64]] }, [1]]) {
      let err: unknown;
      try {
        applySpaceFile(defaultSpace(batched, { cores: 2, gpus: 0 }), bad, "space.json", batched);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(UserError);
      expect((err as UserError).message).toMatch(/^space\.json: /);
    }
  });
});

const base: Candidate = {
  batching: true,
  maxBatchSize: 16,
  preferredBatchSize: [8],
  maxQueueDelayMicroseconds: 100,
  instances: 1,
};

describe("editsBetween", () => {
  it("names only the fields that differ from the user's config", () => {
    expect(editsBetween(base, { ...base, instances: 2 }, "KIND_CPU")).toEqual({
      instanceCounts: [{ kind: "KIND_CPU", count: 2 }],
    });
    expect(editsBetween(base, { ...base, maxQueueDelayMicroseconds: 5000 }, "KIND_CPU")).toEqual({
      dynamicBatching: { maxQueueDelayMicroseconds: 5000 },
    });
    expect(editsBetween(base, { ...base, batching: false }, "KIND_CPU")).toEqual({ dynamicBatching: false });
    expect(editsBetween({ ...base, batching: false }, base, "KIND_GPU")).toEqual({
      dynamicBatching: { preferredBatchSize: [8], maxQueueDelayMicroseconds: 100 },
    });
    expect(editsBetween(base, base, "KIND_CPU")).toEqual({});
  });
});
