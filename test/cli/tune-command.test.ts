import { InvalidArgumentError } from "commander";
import { describe, expect, it } from "vitest";
import { parseConcurrency, parseDuration, parseLatencyBudget } from "../../src/cli/tune-command.js";

describe("tune's command line", () => {
  it("reads --latency-budget p99=MS|p95=MS, --budget durations and --concurrency N|auto", () => {
    expect(parseLatencyBudget("p99=50")).toEqual({ percentile: "p99", ms: 50 });
    expect(parseLatencyBudget("p95=2.5")).toEqual({ percentile: "p95", ms: 2.5 });
    expect(parseDuration("10m")).toBe(600_000);
    expect(parseDuration("90s")).toBe(90_000);
    expect(parseDuration("45")).toBe(45_000);
    expect(parseDuration("1h")).toBe(3_600_000);
    expect(parseConcurrency("auto")).toBe("auto");
    expect(parseConcurrency("8")).toBe(8);
    for (const [f, bad] of [
      [parseLatencyBudget, "p90=5"],
      [parseLatencyBudget, "p99=0"],
      [parseLatencyBudget, "50"],
      [parseDuration, "10 minutes"],
      [parseDuration, "0s"],
      [parseConcurrency, "0"],
      [parseConcurrency, "many"],
    ] as const)
      expect(() => (f as (v: string) => unknown)(bad), bad).toThrow(InvalidArgumentError);
  });
});

describe("tune's --shape, --input-data and --request-parameter", () => {
  it("takes them as perf does, so a model with -1 in an input's shape can be tuned", async () => {
    const { Command } = await import("commander");
    const { registerTuneCommand } = await import("../../src/cli/tune-command.js");
    const program = new Command().exitOverride();
    const cmd = registerTuneCommand(program, {} as never);
    // Stop before the action: only the flags are read here.
    cmd.hook("preAction", () => {
      throw new Error("parsed");
    });
    await expect(
      program.parseAsync(
        [
          "tune",
          "dynamic",
          "--shape",
          "X:16",
          "--shape",
          "Y=2x3",
          "--input-data",
          "zero",
          "--request-parameter",
          "max_tokens:4:int",
        ],
        { from: "user" },
      ),
    ).rejects.toThrow("parsed");
    expect(cmd.opts()).toMatchObject({
      shape: [
        ["X", [16]],
        ["Y", [2, 3]],
      ],
      inputData: "zero",
      requestParameter: [["max_tokens", 4]],
    });
    await expect(program.parseAsync(["tune", "m", "--shape", "X:0"], { from: "user" })).rejects.toThrow(
      /whole number >= 1/,
    );
  });
});
