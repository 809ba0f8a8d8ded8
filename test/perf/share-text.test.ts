import { describe, expect, it } from "vitest";
import { shareText } from "../../src/perf/profile.js";

describe("shareText (the failure share a stopped run reports)", () => {
  it("never reads 100% while one request succeeded", () => {
    expect(shareText(1065 / 1066)).toBe("99.9%");
    expect(shareText(20_000 / 20_001)).toBe("99.9%");
  });

  it("never reads as the 10% limit itself when over it", () => {
    expect(shareText(0.1004)).toBe("10.1%");
  });

  it("rounds the shares in between to whole percents", () => {
    expect(shareText(0.5)).toBe("50%");
    expect(shareText(0.666)).toBe("67%");
  });
});
