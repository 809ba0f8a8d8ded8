import { describe, expect, it } from "vitest";
import { compareTimestamps, parseTimestamp, sinceParam, splitLogLine } from "../../src/runtimes/log-timestamps.js";

describe("log timestamps (docker and kubectl)", () => {
  it("compare exactly at nanosecond precision, whatever the digits", () => {
    const a = parseTimestamp("2026-11-29T18:23:07.094419123Z")!;
    const b = parseTimestamp("2026-11-29T18:23:07.0944192Z")!;
    expect(a).toEqual([Date.parse("2026-11-29T18:23:07Z") / 1000, 94419123]);
    expect(compareTimestamps(a, b)).toBeLessThan(0);
    expect(compareTimestamps(a, a)).toBe(0);
    expect(parseTimestamp("2026-11-29T18:23:07+01:00")).toEqual([Date.parse("2026-11-29T17:23:07Z") / 1000, 0]);
    expect(parseTimestamp("nope")).toBeUndefined();
    expect(sinceParam([1700000000, 5])).toBe("1700000000.000000005");
  });

  it("split a --timestamps line into its time and Triton's text", () => {
    const l = splitLogLine(
      '2026-11-29T18:23:07.094419123Z I1129 18:23:07.094 1 http_server.cc:4713] "Started HTTPService at 0.0.0.0:8000"',
    );
    expect(l.raw).toBe("2026-11-29T18:23:07.094419123Z");
    expect(l.text).toBe('I1129 18:23:07.094 1 http_server.cc:4713] "Started HTTPService at 0.0.0.0:8000"');
    expect(splitLogLine("no timestamp here")).toEqual({ text: "no timestamp here" });
  });
});
