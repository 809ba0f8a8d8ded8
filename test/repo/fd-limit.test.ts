import { describe, expect, it } from "vitest";
import { isFdLimitError, mapPool, retryFdLimit } from "../../src/repo/fd-limit.js";

const errno = (code: string) => Object.assign(new Error(code), { code });

describe("mapPool", () => {
  it("keeps at most `limit` calls in flight and the results in order", async () => {
    let inFlight = 0;
    let most = 0;
    const out = await mapPool([...Array(50).keys()], 4, async (n) => {
      inFlight++;
      most = Math.max(most, inFlight);
      await new Promise((r) => setImmediate(r));
      inFlight--;
      return n * 2;
    });
    expect(most).toBe(4);
    expect(out).toEqual([...Array(50).keys()].map((n) => n * 2));
  });

  it("throws the first failure after the calls in flight settle, and starts no more", async () => {
    const started: number[] = [];
    let settled = 0;
    await expect(
      mapPool([...Array(20).keys()], 3, async (n) => {
        started.push(n);
        await new Promise((r) => setImmediate(r));
        settled++;
        if (n === 1) throw new Error("one");
        return n;
      }),
    ).rejects.toThrow("one");
    expect(settled).toBe(started.length);
    expect(started.length).toBeLessThan(20);
  });

  it("an empty list is an empty result", async () => {
    expect(await mapPool([], 8, async () => 1)).toEqual([]);
  });
});

describe("retryFdLimit", () => {
  it("tries again while the process is out of descriptors, then returns", async () => {
    let calls = 0;
    const slept: number[] = [];
    const got = await retryFdLimit(
      async () => {
        calls++;
        if (calls < 4) throw errno(calls % 2 ? "EMFILE" : "ENFILE");
        return "read";
      },
      { sleep: async (ms) => void slept.push(ms) },
    );
    expect(got).toBe("read");
    expect(calls).toBe(4);
    expect(slept).toEqual([2, 4, 8]);
  });

  it("any other error is the caller's at once", async () => {
    let calls = 0;
    const op = async () => {
      calls++;
      throw errno("ENOENT");
    };
    await expect(retryFdLimit(op, { sleep: async () => {} })).rejects.toMatchObject({ code: "ENOENT" });
    expect(calls).toBe(1);
  });

  it("gives up after maxWaitMs with the limit error itself", async () => {
    let t = 0;
    const op = async () => {
      throw errno("EMFILE");
    };
    await expect(
      retryFdLimit(op, { maxWaitMs: 1000, now: () => t, sleep: async (ms) => void (t += ms) }),
    ).rejects.toMatchObject({ code: "EMFILE" });
    expect(t).toBeGreaterThanOrEqual(1000);
  });

  it("knows the limit errors by their code", () => {
    expect(isFdLimitError(errno("EMFILE"))).toBe(true);
    expect(isFdLimitError(errno("ENFILE"))).toBe(true);
    expect(isFdLimitError(errno("EACCES"))).toBe(false);
    expect(isFdLimitError(undefined)).toBe(false);
  });
});
