import { describe, expect, it } from "vitest";
import { SuggestionBudget, closest, cycleText, editDistance, quoteList } from "../../src/repo/suggest.js";

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

  it("stops suggesting once its budget of comparisons is spent", () => {
    const budget = new SuggestionBudget(5);
    const names = ["a1", "b2", "c3", "dims"];
    expect(closest("dim", names, budget)).toBe("dims");
    expect(budget.comparisons).toBe(1);
    expect(closest("dim", names, budget)).toBeUndefined();
  });
});

describe("quoteList", () => {
  it("joins with commas and a conjunction", () => {
    expect(quoteList([])).toBe("");
    expect(quoteList(["a"])).toBe("'a'");
    expect(quoteList(["a", "b", "c"], "and")).toBe("'a', 'b' and 'c'");
  });

  it("counts what is past its limit", () => {
    const many = Array.from({ length: 12 }, (_, i) => `t${i}`);
    expect(quoteList(many, "and", 3)).toBe("'t0', 't1', 't2' and 9 more");
    expect(quoteList(many, "or", 2)).toBe("'t0', 't1' or one of 10 more");
  });
});

describe("cycleText", () => {
  it("closes the cycle, and shortens a long one around a count", () => {
    expect(cycleText(["a", "b"])).toBe("a -> b -> a");
    expect(cycleText(Array.from({ length: 20 }, (_, i) => `t${i}`))).toBe(
      "t0 -> t1 -> t2 -> t3 -> … (13 more) -> t17 -> t18 -> t19 -> t0",
    );
  });
});
