import { describe, expect, it } from "vitest";
import { UserError } from "../../../src/errors.js";
import { checkGlibc, compareVersions, glibcVersion } from "../../../src/runtimes/local/glibc.js";

describe("glibc", () => {
  it("compares dotted versions numerically", () => {
    expect(compareVersions("2.35", "2.35")).toBe(0);
    expect(compareVersions("2.9", "2.35")).toBe(-1);
    expect(compareVersions("2.36", "2.35")).toBe(1);
  });
  it("accepts this machine's glibc", () => {
    expect(checkGlibc(glibcVersion(), "linux")).toMatch(/^2\./);
  });
  it("refuses an old glibc, musl and non-Linux with what to do", () => {
    for (const [v, plat, re] of [
      ["2.31", "linux", /too old/],
      [undefined, "linux", /musl/],
      ["2.39", "darwin", /darwin/],
    ] as const) {
      const err = (() => {
        try {
          checkGlibc(v, plat);
        } catch (e) {
          return e as UserError;
        }
      })();
      expect(err).toBeInstanceOf(UserError);
      expect(err!.message).toMatch(re);
      expect(err!.hint).toMatch(/--runtime docker/);
    }
  });
});
