/**
 * Lint agrees with Triton: each model of agreement-cases.ts that a real tritonserver (2.51, the
 * local runtime's) refuses, lint says will not load (an error, or a warning that this machine or
 * runtime lacks what it needs); each one Triton loads, lint finds no error in and counts as
 * loading. This file is the lint part; agreement.integration.test.ts loads the same cases into a
 * real tritonserver and checks that Triton says so too.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LintResult, lintRepository } from "../../src/repo/lint.js";
import { CASES, SCAFFOLD, caseRepository } from "./agreement-cases.js";
import { removeTempRepos, summary } from "./helpers.js";
import { lintFacts } from "../../src/runtimes/kinds.js";

afterAll(removeTempRepos);

describe("lint agrees with Triton", () => {
  let repo = "";
  let lint: LintResult;

  const linted = (model: string) => {
    const m = lint.models.find((x) => x.name === model);
    if (!m) throw new Error(`lint did not report model ${model}`);
    return m;
  };

  beforeAll(async () => {
    ({ repo, lint } = await caseRepository());
  });

  it("has distinct cases", () => {
    expect(new Set(CASES.map((c) => c.model)).size).toBe(CASES.length);
  });

  it.each(CASES.filter((c) => c.lint !== "accepted").map((c) => [c.model, c.lint]))(
    "lint says %s will not load: %s",
    (model, code) => {
      const m = linted(model);
      expect(m.wouldLoad, summary(m.diagnostics).join("\n")).toBe(false);
      // The finding is an error, or a warning that this machine or runtime lacks what the model needs.
      const found = m.diagnostics.filter((d) => d.code === code && (d.severity === "error" || m.unavailable));
      expect(found, summary(m.diagnostics).join("\n")).not.toEqual([]);
    },
  );

  it.each([...CASES.filter((c) => c.lint === "accepted").map((c) => c.model), SCAFFOLD])(
    "lint finds no error in %s and counts it as loading",
    (model) => {
      const m = linted(model);
      expect(summary(m.diagnostics.filter((d) => d.severity === "error"))).toEqual([]);
      expect(m.wouldLoad, m.unavailable).toBe(true);
    },
  );

  it("lint finds nothing at all in the scaffold of `triton-dev init`", () => {
    expect(summary(linted(SCAFFOLD).diagnostics)).toEqual([]);
  });

  it("`triton-dev lint` (GPU problems as warnings) reaches the same verdict as `up`", async () => {
    const asLint = await lintRepository(repo, {
      ...lintFacts("local"),
      gpuAvailable: false,
      gpuMissingSeverity: "warning",
      autoComplete: false,
    });
    const verdicts = (r: LintResult) => r.models.map((m) => `${m.name}: ${m.wouldLoad}`);
    expect(verdicts(asLint)).toEqual(verdicts(lint));
    expect(asLint.models.find((m) => m.name === "resnet50_fp16")).toMatchObject({
      wouldLoad: false,
      unavailable: "needs a GPU",
    });
  });
});
