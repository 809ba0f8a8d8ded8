import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { MetricsParseError, parseExposition, parseValue } from "../../src/metrics/prometheus.js";
import { tritonSnapshot } from "../../src/metrics/triton.js";

const here = path.dirname(fileURLToPath(import.meta.url));
// Captured from tritonserver 2.51 (the local runtime's) started with
// --metrics-config summary_latencies=true after five requests to the sample pipeline.
const SUMMARY_SCRAPE = fs.readFileSync(path.join(here, "fixtures/triton-2.51-summary.txt"), "utf8");

describe("parseExposition", () => {
  it("keeps each labelled child of a summary apart (the parser alone would fold them into one)", () => {
    const x = parseExposition(SUMMARY_SCRAPE);
    const queue = x.summaries.filter((s) => s.name === "nv_inference_queue_summary_us");
    expect(queue.map((s) => s.labels.model).sort()).toEqual([
      "bert_tokenizer",
      "image_classifier",
      "sentiment_classifier",
      "sentiment_pipeline",
    ]);
    const pipe = queue.find((s) => s.labels.model === "sentiment_pipeline")!;
    expect(pipe.labels).toEqual({ model: "sentiment_pipeline", version: "1" });
    expect(pipe.count).toBe(5);
    expect(Object.keys(pipe.quantiles).sort()).toEqual(["0.5", "0.9", "0.95", "0.99", "0.999"]);
    // A model with no request in the window: Triton writes "Nan".
    const idle = x.summaries.find(
      (s) => s.name === "nv_inference_request_summary_us" && s.labels.model === "image_classifier",
    )!;
    expect(idle.count).toBe(0);
    expect(Number.isNaN(idle.quantiles["0.99"])).toBe(true);
  });

  it("reads counters and gauges with their labels", () => {
    const x = parseExposition(SUMMARY_SCRAPE);
    const ok = x.samples.filter((s) => s.name === "nv_inference_request_success");
    expect(ok).toHaveLength(4);
    expect(ok.find((s) => s.labels.model === "sentiment_pipeline")?.value).toBe(5);
    expect(x.samples.some((s) => s.name.endsWith("_summary_us") || s.name.endsWith("_summary_us_count"))).toBe(false);
  });

  it("handles summaries whose count comes before the quantiles, escapes, NaN and infinities", () => {
    const text = [
      "# TYPE rpc_seconds summary",
      'rpc_seconds_count{path="/a\\"b"} 3',
      'rpc_seconds{path="/a\\"b",quantile="0.99"} +Inf',
      'rpc_seconds_sum{path="/a\\"b"} 1.5',
      "# TYPE up gauge",
      "up NaN",
      "",
    ].join("\n");
    const x = parseExposition(text);
    expect(x.summaries).toEqual([
      { name: "rpc_seconds", labels: { path: '/a"b' }, count: 3, sum: 1.5, quantiles: { "0.99": Infinity } },
    ]);
    expect(Number.isNaN(x.samples[0]!.value)).toBe(true);
    expect(parseValue("-Inf")).toBe(-Infinity);
    expect(parseValue("1e3")).toBe(1000);
  });

  it("says plainly when the endpoint is not speaking the text format", () => {
    expect(() => parseExposition("# TYPE a b c\n")).toThrow(MetricsParseError);
  });
});

describe("tritonSnapshot", () => {
  it("sums each model over versions and failure reasons, and picks up the summaries", () => {
    const snap = tritonSnapshot(parseExposition(SUMMARY_SCRAPE), 1000);
    expect(snap.summaries).toBe(true);
    const pipe = snap.models.sentiment_pipeline!;
    expect(pipe.success).toBe(5);
    expect(pipe.failure).toBe(0);
    expect(pipe.versions).toEqual(["1"]);
    expect(pipe.queueSummary?.count).toBe(5);
    expect(pipe.queueSummary?.q["0.99"]).toBeGreaterThanOrEqual(0);
    expect(snap.cpu?.memoryTotalBytes).toBeGreaterThan(0);
    expect(snap.gpus).toEqual([]);
  });

  it("reads the DCGM gauges per GPU", () => {
    const text = [
      "# TYPE nv_gpu_utilization gauge",
      'nv_gpu_utilization{gpu_uuid="GPU-1"} 0.25',
      'nv_gpu_utilization{gpu_uuid="GPU-0"} 0.5',
      "# TYPE nv_gpu_memory_used_bytes gauge",
      'nv_gpu_memory_used_bytes{gpu_uuid="GPU-0"} 1073741824',
      "# TYPE nv_gpu_memory_total_bytes gauge",
      'nv_gpu_memory_total_bytes{gpu_uuid="GPU-0"} 17179869184',
      "# TYPE nv_inference_request_failure counter",
      'nv_inference_request_failure{model="m",reason="REJECTED",version="1"} 2',
      'nv_inference_request_failure{model="m",reason="BACKEND",version="2"} 1',
    ].join("\n");
    const snap = tritonSnapshot(parseExposition(text), 0);
    expect(snap.gpus).toEqual([
      { uuid: "GPU-0", utilization: 0.5, memoryUsedBytes: 2 ** 30, memoryTotalBytes: 16 * 2 ** 30 },
      { uuid: "GPU-1", utilization: 0.25, memoryUsedBytes: 0, memoryTotalBytes: 0 },
    ]);
    expect(snap.models.m!.failure).toBe(3);
    expect(snap.models.m!.versions).toEqual(["1", "2"]);
    expect(snap.summaries).toBe(false);
  });
});
