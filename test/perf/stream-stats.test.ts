import { describe, expect, it } from "vitest";
import { LoadGenerator, type WindowData } from "../../src/perf/load.js";
import { mergeWindows } from "../../src/perf/profile.js";
import { factsOf, StreamWindow, summariseStream } from "../../src/perf/stream-stats.js";
import type { InferTransport, Outcome } from "../../src/perf/transport.js";

describe("streaming statistics", () => {
  it("takes time to first response from the send and inter-response gaps between data responses", () => {
    const f = factsOf(100, [112, 115, 125], 6);
    expect(f.responses).toBe(3);
    expect(f.firstResponseUs).toBeCloseTo(12_000);
    expect(f.lastResponseUs).toBeCloseTo(25_000);
    expect(f.gapsUs.map((g) => Math.round(g))).toEqual([3000, 10_000]);
    expect(f.elements).toBe(6);
  });

  it("gives no first-response time and no gaps to a request answered with the final flag alone", () => {
    const f = factsOf(0, [], 0);
    expect(f).toEqual({ responses: 0, gapsUs: [], elements: 0 });
    const w = new StreamWindow();
    w.record(f);
    const s = summariseStream([w], 1000);
    expect(s.requests).toBe(1);
    expect(s.responsesPerRequest).toBe(0);
    expect(s.firstResponse.count).toBe(0);
    expect(s.lastResponse.count).toBe(0);
    expect(s.interResponse.count).toBe(0);
  });

  it("merges windows into rates, responses per request and percentiles", () => {
    const a = new StreamWindow();
    const b = new StreamWindow();
    // 4 requests: 1, 2, 3 and 4 responses, 2 elements each, 10 ms apart after a 5*k ms first response.
    for (const [w, n] of [
      [a, 1],
      [a, 2],
      [b, 3],
      [b, 4],
    ] as const)
      w.record(
        factsOf(
          0,
          Array.from({ length: n }, (_, i) => 5 * n + 10 * i),
          2 * n,
        ),
      );
    const s = summariseStream([a, b], 2000);
    expect(s.requests).toBe(4);
    expect(s.responses).toBe(10);
    expect(s.requestsPerSec).toBe(2);
    expect(s.responsesPerSec).toBe(5);
    expect(s.responsesPerRequest).toBe(2.5);
    expect(s.outputElements).toBe(20);
    expect(s.outputElementsPerSec).toBe(10);
    expect(s.firstResponse.count).toBe(4);
    expect(s.firstResponse.minUs).toBeCloseTo(5000, -2);
    expect(s.firstResponse.maxUs).toBeCloseTo(20_000, -2);
    // The last data response: 5, 20, 35 and 50 ms (5n + 10(n - 1)).
    expect(s.lastResponse.count).toBe(4);
    expect(s.lastResponse.minUs).toBeCloseTo(5000, -2);
    expect(s.lastResponse.maxUs).toBeCloseTo(50_000, -2);
    // 0 + 1 + 2 + 3 gaps, every one 10 ms.
    expect(s.interResponse.count).toBe(6);
    expect(s.interResponse.p50Us).toBeCloseTo(10_000, -2);
    expect(s.interResponse.p99Us).toBeCloseTo(10_000, -2);
  });

  it("counts failed streamed requests as errors, outside the streaming figures, through the load generator", async () => {
    let n = 0;
    const transport: InferTransport = {
      protocol: "grpc",
      endpoint: "test",
      send: async (): Promise<Outcome> => {
        await new Promise((r) => setTimeout(r, 2));
        // Every third request ends in the model's error, the others stream 3 responses.
        if (++n % 3 === 0)
          return {
            ok: false,
            latencyUs: 1000,
            sendUs: 0,
            recvUs: 0,
            error: { kind: "stream error: TEXT has no words", connection: false },
          };
        return { ok: true, latencyUs: 3000, sendUs: 0, recvUs: 0, stream: factsOf(0, [1, 2, 3], 3) };
      },
      probe: () => Promise.reject(new Error("unused")),
      close: () => undefined,
    };
    const gen = new LoadGenerator(transport, { kind: "concurrency", concurrency: 2 });
    gen.start();
    // Some 30 requests sent, 10 of them failed: enough for the one-in-three below.
    for (let k = 0; k < 1_000 && n < 30; k++) await new Promise((r) => setTimeout(r, 5));
    const w: WindowData = gen.cut();
    await gen.stop(1000);
    const errors = w.errors.get("stream error: TEXT has no words") ?? 0;
    expect(errors).toBeGreaterThan(0);
    expect(w.stream?.requests).toBe(w.success);
    expect(w.stream?.responses).toBe(3 * w.success);
    // One in three failed, give or take the requests in flight at the cut.
    expect(Math.abs(w.success - 2 * errors)).toBeLessThanOrEqual(3);
    const level = mergeWindows("concurrency", 2, [w], 1, false, 1, undefined);
    expect(level.errorCount).toBe(errors);
    expect(level.stream?.responsesPerRequest).toBe(3);
    expect(level.stream?.interResponse.count).toBe(2 * w.success);
  });

  it("leaves levels of ordinary models without streaming figures", () => {
    const gen = new LoadGenerator(
      {
        protocol: "http",
        endpoint: "test",
        send: async () => ({ ok: true, latencyUs: 10, sendUs: 0, recvUs: 0 }),
        probe: () => Promise.reject(new Error("unused")),
        close: () => undefined,
      },
      { kind: "concurrency", concurrency: 1 },
    );
    const w = gen.cut();
    expect(w.stream).toBeUndefined();
    expect(mergeWindows("concurrency", 1, [w], 1, false, 1, undefined).stream).toBeUndefined();
  });
});
