import type { Diagnostic } from "../../src/repo/diagnostics.js";
import type { SessionEvent } from "../../src/session/events.js";
import type { LevelResult } from "../../src/perf/profile.js";
import type { PerfReport } from "../../src/perf/run.js";

export const T0 = Date.UTC(2026, 0, 5, 9, 30, 0);

/** The events a foreground `up` on two models emits until it watches. */
export function startEvents(models = ["offset", "tokenizer"]): SessionEvent[] {
  return [
    { type: "staged", models, repository: "/tmp/run/repository" },
    { type: "starting", runtime: "local", pid: 4242, logFile: "/tmp/run/tritonserver.log" },
    {
      type: "ready",
      endpoints: { http: "127.0.0.1:8000", grpc: "127.0.0.1:8001", metrics: "127.0.0.1:8002" },
      models: models.map((name) => ({ name, version: "1", state: "READY" as const })),
      elapsedMs: 2100,
    },
    { type: "watching", modelsDir: "/home/me/models", mode: "poll" },
  ];
}

export const DIMS_ERROR: Diagnostic = {
  severity: "error",
  file: "/home/me/models/offset/config.pbtxt",
  line: 4,
  column: 43,
  message: "dims must be >= 1 or -1 (variable), got 0",
  hint: "Use a positive size, or -1 for a dimension that varies.",
  model: "offset",
  code: "dims-invalid",
};

export function level(value: number, throughput: number, p99Ms: number): LevelResult {
  const us = (ms: number) => ms * 1000;
  return {
    kind: "concurrency",
    value,
    stable: true,
    trials: 3,
    windows: [],
    durationMs: 3000,
    requests: Math.round(throughput * 3),
    throughput,
    latency: {
      count: 100,
      minUs: us(0.5),
      maxUs: us(p99Ms * 1.2),
      avgUs: us(p99Ms / 2),
      stdDevUs: us(0.1),
      p50Us: us(p99Ms / 2),
      p90Us: us(p99Ms * 0.8),
      p95Us: us(p99Ms * 0.9),
      p99Us: us(p99Ms),
    },
    clientSendUs: 10,
    clientRecvUs: 10,
    errors: {},
    errorCount: 0,
    server: {
      requests: 300,
      queueUs: 40,
      computeInputUs: 20,
      computeInferUs: 900,
      computeOutputUs: 15,
      overheadUs: 25,
      avgBatchSize: 1,
      inferenceCount: 300,
      executionCount: 300,
      failures: 0,
      avgRequestUs: 1000,
    },
  };
}

export function perfReport(model = "offset"): PerfReport {
  return {
    model,
    sweeps: [
      {
        model,
        servedModel: model,
        engine: "builtin",
        protocol: "http",
        endpoint: "127.0.0.1:8000",
        kind: "concurrency",
        batchSize: 1,
        measurementIntervalMs: 1000,
        startedAt: new Date(T0).toISOString(),
        finishedAt: new Date(T0 + 12_000).toISOString(),
        levels: [level(1, 812.4, 1.9), level(2, 1403.2, 2.4), level(3, 1688.9, 3.1), level(4, 1734.5, 4.2)],
      },
    ],
  };
}

/** A streaming sweep of a decoupled model: `tokens` responses per request, 2 ms to the first, 0.5 ms between. */
export function streamPerfReport(model = "text_streamer", tokens = 12): PerfReport {
  const base = perfReport(model);
  const sweep = base.sweeps[0]!;
  const summary = (count: number, ms: number) => ({
    count,
    minUs: ms * 800,
    maxUs: ms * 1500,
    avgUs: ms * 1000,
    stdDevUs: 1,
    p50Us: ms * 1000,
    p90Us: ms * 1200,
    p95Us: ms * 1300,
    p99Us: ms * 1400,
  });
  return {
    ...base,
    sweeps: [
      {
        ...sweep,
        protocol: "grpc",
        endpoint: "127.0.0.1:8001",
        streaming: "ModelStreamInfer",
        levels: [level(1, 40, 9), level(2, 70, 12)].map((l) => ({
          ...l,
          server: undefined,
          errorCount: l.value === 2 ? 3 : 0,
          stream: {
            requests: l.requests,
            responses: l.requests * tokens,
            requestsPerSec: l.throughput,
            responsesPerSec: l.throughput * tokens,
            responsesPerRequest: tokens,
            outputElements: l.requests * tokens * 2,
            outputElementsPerSec: l.throughput * tokens * 2,
            firstResponse: summary(l.requests, 2 * l.value),
            lastResponse: summary(l.requests, 2 * l.value + 0.5 * (tokens - 1)),
            interResponse: summary(l.requests * (tokens - 1), 0.5),
          },
        })),
      },
    ],
  };
}
