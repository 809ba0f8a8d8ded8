import { describe, expect, it } from "vitest";
import { countModels, modelCountLine, runReadiness } from "../../src/triton/run-readiness.js";

describe("runReadiness", () => {
  const index = [
    { name: "good", version: "1", state: "READY" as const },
    { name: "other", version: "1", state: "READY" as const },
  ];

  it("is ready when Triton answers, says ready, and every served model is READY", () => {
    expect(runReadiness({ live: true, tritonReady: true, served: ["good", "other"], index })).toEqual({
      ready: true,
      waitingFor: [],
    });
  });

  it("does not count what it does not serve (refused, skipped, withdrawn after a failed load)", () => {
    const withFailed = [...index, { name: "bad", state: "UNAVAILABLE" as const, reason: "boom" }];
    expect(runReadiness({ live: true, tritonReady: true, served: ["good"], index: withFailed }).ready).toBe(true);
  });

  it("names each served model that is not READY, and a served model Triton does not list", () => {
    const r = runReadiness({
      live: true,
      tritonReady: false,
      served: ["good", "slow", "gone"],
      index: [...index, { name: "slow", version: "1", state: "LOADING" as const }],
    });
    expect(r).toEqual({
      ready: false,
      waitingFor: ["slow is LOADING", "gone is not in Triton's repository index yet"],
    });
  });

  it("takes a model with one READY version as serving, whatever its other versions", () => {
    const versions = [
      { name: "m", version: "1", state: "READY" as const },
      { name: "m", version: "2", state: "UNAVAILABLE" as const, reason: "boom" },
    ];
    // Triton still counts the failed version 2: not ready, and it says which.
    expect(runReadiness({ live: true, tritonReady: false, served: ["m"], index: versions })).toEqual({
      ready: false,
      waitingFor: ["Triton's /v2/health/ready still counts the failed load of m v2"],
    });
    expect(runReadiness({ live: true, tritonReady: true, served: ["m"], index: versions }).ready).toBe(true);
  });

  it("is not ready while Triton does not answer", () => {
    expect(runReadiness({ live: false, tritonReady: false, served: [], index: [] })).toEqual({
      ready: false,
      waitingFor: ["Triton does not answer"],
    });
  });
});

describe("the count of READY models", () => {
  it("counts each model once, READY when one version is, and names the others with their reasons", () => {
    const c = countModels([
      { name: "b", state: "READY" },
      { name: "a", state: "UNAVAILABLE", reason: "boom" },
      { name: "b", state: "UNAVAILABLE", version: "2" } as never,
      { name: "e", reason: "it runs a, which failed to load" },
      { name: "g", state: "SKIPPED", reason: "needs a GPU" },
    ]);
    expect(c).toEqual({
      ready: ["b"],
      notReady: [
        { name: "a", state: "UNAVAILABLE", reason: "boom" },
        { name: "e", state: "UNAVAILABLE", reason: "it runs a, which failed to load" },
        { name: "g", state: "SKIPPED", reason: "needs a GPU" },
      ],
      total: 4,
    });
    expect(modelCountLine(c)).toBe(
      "1 of 4 models READY (b); not READY: a (UNAVAILABLE: boom), e (UNAVAILABLE: it runs a, which failed to load), g (SKIPPED: needs a GPU)",
    );
    expect(modelCountLine(c, false)).toBe(
      "1 of 4 models READY (b); not READY: a (UNAVAILABLE), e (UNAVAILABLE), g (SKIPPED)",
    );
    expect(modelCountLine(countModels([{ name: "x", state: "READY" }]))).toBe("1 of 1 model READY (x)");
    expect(modelCountLine(countModels([{ name: "x", state: "UNAVAILABLE" }]))).toBe(
      "0 of 1 model READY; not READY: x (UNAVAILABLE)",
    );
  });
});
