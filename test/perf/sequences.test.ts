import { describe, expect, it } from "vitest";
import { UsageError } from "../../src/errors.js";
import {
  describeSequences,
  parseSequenceIdRange,
  SEQUENCE_DEFAULTS,
  SequenceIds,
  SequencePool,
  type SequenceStep,
} from "../../src/perf/sequences.js";

/** A seeded generator, so the drawn lengths are the same on every run. */
function lcg(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

describe("SequencePool", () => {
  it("makes each request of an iterative-sequence model a sequence of its own: START with a fresh id, never END", async () => {
    const pool = new SequencePool(2, { ...SEQUENCE_DEFAULTS, iterative: true }, new SequenceIds({ idStart: 1 }));
    const got: SequenceStep[] = [];
    for (let i = 0; i < 4; i++) {
      const s = (await pool.acquire())!;
      got.push(s);
      pool.release(s, true);
    }
    expect(got.map((s) => [s.start, s.end, s.index])).toEqual(got.map(() => [true, false, 0]));
    expect(new Set(got.map((s) => s.id)).size).toBe(4);
    // Nothing to end when the level stops: the model ended each sequence with its request.
    const open = (await pool.acquire())!;
    expect(pool.close()).toEqual([]);
    expect(pool.release(open, true)).toBeUndefined();
    expect(describeSequences({ length: 1, variationPct: 0, iterative: true }, "concurrency")).toMatch(
      /one request each \(an iterative sequence/,
    );
  });

  it("hands out each sequence's requests in order: START first, END last, one id per sequence", async () => {
    const pool = new SequencePool(
      1,
      { ...SEQUENCE_DEFAULTS, length: 3, variationPct: 0 },
      new SequenceIds({ idStart: 7 }),
    );
    const got: SequenceStep[] = [];
    for (let i = 0; i < 7; i++) {
      const s = (await pool.acquire())!;
      got.push(s);
      pool.release(s, true);
    }
    expect(got.map((s) => [s.id, s.start, s.end, s.index])).toEqual([
      [7, true, false, 0],
      [7, false, false, 1],
      [7, false, true, 2],
      [8, true, false, 0],
      [8, false, false, 1],
      [8, false, true, 2],
      [9, true, false, 0],
    ]);
  });

  it("never has two requests of one sequence out: with all of them out, the next waits for a release", async () => {
    const pool = new SequencePool(
      2,
      { ...SEQUENCE_DEFAULTS, length: 5, variationPct: 0 },
      new SequenceIds({ idStart: 1 }),
    );
    const a = (await pool.acquire())!;
    const b = (await pool.acquire())!;
    expect(new Set([a.id, b.id]).size).toBe(2);
    expect(pool.exhausted).toBe(true);
    let third: SequenceStep | undefined;
    const waiting = pool.acquire().then((s) => (third = s));
    await Promise.resolve();
    expect(third).toBeUndefined();
    pool.release(b, true);
    await waiting;
    expect(third).toMatchObject({ id: b.id, start: false, index: 1 });
  });

  it("draws lengths within the variation, and a failed request's sequence is not continued", async () => {
    const lengths: number[] = [];
    const pool = new SequencePool(
      1,
      { ...SEQUENCE_DEFAULTS, length: 10, variationPct: 20 },
      new SequenceIds({ idStart: 1 }),
      lcg(42),
    );
    let run = 0;
    for (let i = 0; i < 400; i++) {
      const s = (await pool.acquire())!;
      run++;
      pool.release(s, true);
      if (s.end) {
        lengths.push(run);
        run = 0;
      }
    }
    expect(Math.min(...lengths)).toBeGreaterThanOrEqual(8);
    expect(Math.max(...lengths)).toBeLessThanOrEqual(12);
    expect(new Set(lengths).size).toBeGreaterThan(2);

    const s = (await pool.acquire())!;
    pool.release(s, false);
    const next = (await pool.acquire())!;
    expect(next.id).not.toBe(s.id);
    expect(next.start).toBe(true);
  });

  it("on close, ends the open idle sequences at once and each busy one when its request returns", async () => {
    const pool = new SequencePool(
      3,
      { ...SEQUENCE_DEFAULTS, length: 9, variationPct: 0 },
      new SequenceIds({ idStart: 100 }),
    );
    const a = (await pool.acquire())!;
    pool.release(a, true); // open, idle
    const b = (await pool.acquire())!; // busy at close
    const c = (await pool.acquire())!; // never started: nothing to end
    expect([a.id, b.id, c.id].every((id) => id >= 100)).toBe(true);
    pool.release(c, false);
    const ends = pool.close();
    const open = (await pool.acquire()) === undefined;
    expect(open).toBe(true);
    expect(ends.map((e) => [e.id, e.start, e.end])).toEqual([[a.id, false, true]]);
    expect(pool.release(b, true)).toEqual({ id: b.id, start: false, end: true, index: b.index + 1 });
  });

  it("in a range that wraps, never gives an id to a second sequence while the first is open", async () => {
    const pool = new SequencePool(
      3,
      { ...SEQUENCE_DEFAULTS, length: 4, variationPct: 50 },
      new SequenceIds({ idStart: 1, idEnd: 4 }),
      lcg(7),
    );
    const open = new Map<number, number>(); // id -> requests sent in its current sequence
    let out: SequenceStep[] = [];
    for (let round = 0; round < 200; round++) {
      while (!pool.exhausted) out.push((await pool.acquire())!);
      // Answer them in a shuffled order, as responses come back.
      out = out.sort((a, b) => ((a.id * 7 + round) % 5) - ((b.id * 7 + round) % 5));
      const s = out.shift()!;
      if (s.start) {
        expect(open.has(s.id), `id ${s.id} started again while open`).toBe(false);
        open.set(s.id, 0);
      }
      expect(open.get(s.id)).toBe(s.index);
      open.set(s.id, s.index + 1);
      if (s.end) open.delete(s.id);
      pool.release(s, true);
    }
  });

  it("refuses more sequences at once than the id range holds, and the range wraps", () => {
    expect(() => new SequencePool(5, SEQUENCE_DEFAULTS, new SequenceIds({ idStart: 1, idEnd: 4 }))).toThrow(UsageError);
    const ids = new SequenceIds({ idStart: 3, idEnd: 5 });
    expect([ids.take(), ids.take(), ids.take()]).toEqual([3, 4, 3]);
  });
});

describe("sequence flags", () => {
  it("reads --sequence-id-range as perf_analyzer does, refusing 0 and empty ranges", () => {
    expect(parseSequenceIdRange("1000")).toEqual({ idStart: 1000 });
    expect(parseSequenceIdRange("5:9")).toEqual({ idStart: 5, idEnd: 9 });
    for (const bad of ["0", "9:5", "5:5", "a", "1:2:3"]) expect(() => parseSequenceIdRange(bad)).toThrow(UsageError);
  });

  it("says what the sequences are", () => {
    expect(describeSequences({ length: 20, variationPct: 20 }, "concurrency")).toBe(
      "20 +/- 20% request(s), one per request in flight",
    );
    expect(describeSequences({ length: 3, variationPct: 0, rateSequences: 2 }, "rate")).toBe(
      "3 request(s), 2 open at once",
    );
  });
});
