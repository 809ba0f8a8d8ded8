import { describe, expect, it } from "vitest";
import { UserError } from "../../src/errors.js";
import { findPerfAnalyzer, levelFromCsvRow, perfAnalyzerArgs } from "../../src/perf/perf-analyzer.js";
import { parseCsv } from "../../src/perf/report.js";

// Written by perf_analyzer 2.51 (tritonclient wheel) against the local runtime's bert_tokenizer.
const PA_CSV = `Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency
1,2314.66,35,117,24,11,203,37,0,414,453,471,530
2,2343.86,53,365,38,11,352,27,0,653,1092,1780,5030
`;

describe("perf_analyzer as the engine", () => {
  it("reads its CSV rows into the same level results", () => {
    const { header, rows } = parseCsv(PA_CSV);
    const l = levelFromCsvRow(header, rows[1]!, 8836);
    expect(l).toMatchObject({
      kind: "concurrency",
      value: 2,
      throughput: 2343.86,
      requests: 8836,
      clientSendUs: 53,
      networkServerUs: 365,
    });
    expect(l.latency).toMatchObject({ p50Us: 653, p90Us: 1092, p95Us: 1780, p99Us: 5030, avgUs: 653 });
    expect(l.server).toMatchObject({ queueUs: 38, computeInputUs: 11, computeInferUs: 352, computeOutputUs: 27 });
    const verbose = levelFromCsvRow(
      [...header, "Avg latency", "request/response", "response wait"],
      [...rows[0]!, "429", "35", "388"],
    );
    expect(verbose.latency.avgUs).toBe(429);
  });

  it("passes our flags through under perf_analyzer's names", () => {
    const args = perfAnalyzerArgs(
      {
        model: "m",
        url: "127.0.0.1:8001",
        protocol: "grpc",
        kind: "rate",
        value: 50,
        distribution: "poisson",
        windowMs: 2000,
        stabilityPct: 10,
        maxTrials: 5,
        batchSize: 2,
        shapes: { IN: [3, 4] },
        inputData: "zero",
        stringLength: 16,
      },
      "/tmp/x.csv",
    );
    expect(args.join(" ")).toBe(
      "-m m -u 127.0.0.1:8001 -i grpc --request-rate-range 50 --request-distribution poisson --measurement-interval 2000 --stability-percentage 10 --max-trials 5 -b 2 --shape IN:3,4 --input-data zero --string-length 16 --verbose-csv -f /tmp/x.csv",
    );
  });

  it("asks for --streaming for a decoupled model", () => {
    const base = {
      model: "text_streamer",
      url: "127.0.0.1:8001",
      protocol: "grpc" as const,
      kind: "concurrency" as const,
      value: 2,
      distribution: "constant" as const,
      windowMs: 1000,
      stabilityPct: 10,
      maxTrials: 5,
      batchSize: 1,
      shapes: {},
      inputData: "random" as const,
      stringLength: 16,
    };
    expect(perfAnalyzerArgs({ ...base, streaming: true }, "/tmp/x.csv").slice(0, 7)).toEqual([
      "-m",
      "text_streamer",
      "-u",
      "127.0.0.1:8001",
      "-i",
      "grpc",
      "--streaming",
    ]);
    expect(perfAnalyzerArgs(base, "/tmp/x.csv")).not.toContain("--streaming");
  });

  it("says how to get perf_analyzer when it is missing", () => {
    let err: unknown;
    try {
      findPerfAnalyzer({ PATH: "/nonexistent" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).hint).toMatch(/tritonclient/);
    expect(findPerfAnalyzer({ PATH: "" }, "/opt/pa")).toBe("/opt/pa");
  });
});
