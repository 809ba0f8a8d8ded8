import { describe, expect, it } from "vitest";
import { parseNvidiaSmiCsv, parseTritonGpuMetrics, summariseGpu } from "../../src/perf/gpu.js";

describe("GPU readings", () => {
  it("reads nvidia-smi's CSV (captured on an H200) and tolerates [N/A]", () => {
    const text =
      "0, GPU-15e3accb-d14f-acc6-812d-dd5a09781ad2, NVIDIA H200, 37, 1024, 143771\n1, GPU-2, NVIDIA H200, [N/A], 0, 143771\n";
    const r = parseNvidiaSmiCsv(text);
    expect(r).toHaveLength(2);
    expect(r[0]).toEqual({
      id: "GPU-15e3accb-d14f-acc6-812d-dd5a09781ad2",
      name: "NVIDIA H200",
      utilization: 0.37,
      memoryUsedBytes: 1024 * 2 ** 20,
      memoryTotalBytes: 143771 * 2 ** 20,
    });
    expect(r[1]!.utilization).toBe(0);
  });

  it("reads Triton's nv_gpu_* gauges per gpu_uuid", () => {
    const text = [
      "# HELP nv_gpu_utilization GPU utilization rate [0.0 - 1.0)",
      'nv_gpu_utilization{gpu_uuid="GPU-a"} 0.5',
      'nv_gpu_memory_used_bytes{gpu_uuid="GPU-a"} 2000',
      'nv_gpu_memory_total_bytes{gpu_uuid="GPU-a"} 8000',
      'nv_inference_count{model="m",version="1"} 3',
    ].join("\n");
    expect(parseTritonGpuMetrics(text)).toEqual([
      { id: "GPU-a", utilization: 0.5, memoryUsedBytes: 2000, memoryTotalBytes: 8000 },
    ]);
    expect(parseTritonGpuMetrics("nv_cpu_utilization 0.3\n")).toEqual([]);
  });

  it("summarises samples into average and peak per GPU", () => {
    const s = summariseGpu("nvidia-smi", [
      [{ id: "g", utilization: 0.2, memoryUsedBytes: 10, memoryTotalBytes: 100 }],
      [],
      [{ id: "g", utilization: 0.6, memoryUsedBytes: 30, memoryTotalBytes: 100 }],
    ])!;
    expect(s.samples).toBe(2);
    expect(s.gpus[0]).toMatchObject({ id: "g", memoryUsedMaxBytes: 30, memoryTotalBytes: 100, utilizationMax: 0.6 });
    expect(s.gpus[0]!.utilizationAvg).toBeCloseTo(0.4);
    expect(summariseGpu("triton-metrics", [])).toBeUndefined();
  });
});
