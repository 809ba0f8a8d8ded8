import { describe, expect, it } from "vitest";
import { closest, editDistance, quoteList } from "../../src/repo/suggest.js";

describe("editDistance", () => {
  it("counts insertions, deletions, substitutions and adjacent swaps as one edit each", () => {
    expect(editDistance("dim", "dims")).toBe(1);
    expect(editDistance("dimz", "dims")).toBe(1);
    expect(editDistance("ecoh", "echo")).toBe(1);
    expect(editDistance("abc", "xyz")).toBe(3);
    expect(editDistance("", "abc")).toBe(3);
  });

  it("stops early past the limit", () => {
    expect(editDistance("aaaaaaaa", "bbbbbbbb", 2)).toBe(3);
  });
});

describe("closest", () => {
  it("finds a plausible typo, ignoring case", () => {
    expect(closest("dim", ["name", "dims", "data_type"])).toBe("dims");
    expect(closest("PYTON", ["python", "onnxruntime"])).toBe("python");
  });

  it("does not guess wildly", () => {
    expect(closest("foo", ["python", "onnxruntime"])).toBeUndefined();
  });
});

describe("quoteList", () => {
  it("joins with commas and a conjunction", () => {
    expect(quoteList([])).toBe("");
    expect(quoteList(["a"])).toBe("'a'");
    expect(quoteList(["a", "b", "c"], "and")).toBe("'a', 'b' and 'c'");
  });
});
