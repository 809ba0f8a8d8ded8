import { InvalidArgumentError } from "commander";
import { describe, expect, it } from "vitest";
import { parseRange } from "../../src/cli/perf-command.js";
import { parseUrlFlag } from "../../src/perf/run.js";

describe("perf's command line", () => {
  it("reads perf_analyzer's START:END:STEP ranges and plain lists", () => {
    const c = parseRange("--concurrency-range", true);
    expect(c("1:8")).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(c("4:16:4")).toEqual([4, 8, 12, 16]);
    expect(c("64")).toEqual([64]);
    expect(c("1,2,4,8")).toEqual([1, 2, 4, 8]);
    expect(parseRange("--request-rate-range", false)("10:20:2.5")).toEqual([10, 12.5, 15, 17.5, 20]);
    for (const bad of ["0:4", "4:2", "a", "1:2:3:4", "1.5"]) expect(() => c(bad), bad).toThrow(InvalidArgumentError);
  });

  it("reads -u HOST:PORT", () => {
    expect(parseUrlFlag("127.0.0.1:8001")).toEqual({ host: "127.0.0.1", port: 8001 });
    expect(parseUrlFlag("http://localhost:8000/")).toEqual({ host: "localhost", port: 8000 });
    expect(parseUrlFlag("[::1]:8000")).toEqual({ host: "::1", port: 8000 });
    expect(() => parseUrlFlag("localhost")).toThrow(/HOST:PORT/);
  });
});
