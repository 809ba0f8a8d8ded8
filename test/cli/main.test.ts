import fsp from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { reportError } from "../../src/cli/main.js";

describe("reportError", () => {
  it("reports a full disk met where nothing explained it as an error with a hint, not a crash with a stack", async () => {
    // /dev/full answers every write with ENOSPC.
    const err = await fsp.writeFile("/dev/full", "x").then(
      () => undefined,
      (e: unknown) => e,
    );
    const lines: string[] = [];
    const code = reportError(err, { out: (t) => lines.push(t), err: (t) => lines.push(t) });
    expect(code).toBe(1);
    expect(lines[0]).toMatch(/^error: /);
    expect(lines[1]).toMatch(/^ {2}hint: /);
    expect(lines.join("\n")).not.toContain("    at ");
  });

  it("still reports our own errors as internal, with the stack", () => {
    const lines: string[] = [];
    expect(reportError(new Error("a bug"), { out: (t) => lines.push(t), err: (t) => lines.push(t) })).toBe(70);
    expect(lines[0]).toMatch(/^internal error: Error: a bug\n {4}at /);
  });
});
