import { describe, expect, it } from "vitest";
import { explainIndex } from "../../src/reload/load-reasons.js";

const userPaths = (t: string) => t.split("/run/repository/").join("/home/me/models/");

describe("explainIndex", () => {
  it("gives every staged model that is not READY a reason: the index's, the log's, the fallback's, or where to look", async () => {
    const index = await explainIndex(
      [
        { name: "good", version: "1", state: "READY" },
        {
          name: "bad",
          version: "1",
          state: "UNAVAILABLE",
          reason: "RuntimeError\nAt:\n  /run/repository/bad/1/model.py(6)",
        },
        // A folder Triton could not read a config from: listed with no state and no reason.
        { name: "onlypy" },
        { name: "pipe", version: "1", state: "UNAVAILABLE" },
        { name: "mute", version: "1", state: "UNAVAILABLE" },
        { name: "busy", version: "1", state: "LOADING" },
      ],
      {
        staged: ["good", "bad", "onlypy", "pipe", "mute", "busy", "nover"],
        logLines: [
          "Poll failed for model directory 'onlypy': Invalid model name: Could not determine backend for model 'onlypy'",
          "failed to load model 'nover': at least one version must be available under the version policy of model 'nover'",
        ],
        userPaths,
        fallback: async (m) => (m === "pipe" ? "it runs bad, which failed to load" : undefined),
      },
    );
    const reasons = Object.fromEntries(index.map((e) => [e.name, [e.state, e.reason]]));
    expect(reasons).toEqual({
      good: ["READY", undefined],
      bad: ["UNAVAILABLE", "RuntimeError At: /home/me/models/bad/1/model.py(6)"],
      onlypy: [
        undefined,
        "Poll failed for model directory 'onlypy': Invalid model name: Could not determine backend for model 'onlypy'",
      ],
      pipe: ["UNAVAILABLE", "it runs bad, which failed to load"],
      mute: ["UNAVAILABLE", "Triton did not load it and gave no reason (its log, `triton-dev logs`, may say more)"],
      busy: ["LOADING", undefined],
      // Not in the index at all (Triton found no version to load).
      nover: [
        "UNAVAILABLE",
        "failed to load model 'nover': at least one version must be available under the version policy of model 'nover'",
      ],
    });
    // Only the ensemble its failed step keeps out is marked so: it loads once the step does.
    expect(index.filter((e) => e.heldBySteps).map((e) => e.name)).toEqual(["pipe"]);
  });

  it("leaves a failed version alone while another version of the model serves, and models it did not stage", async () => {
    const index = await explainIndex(
      [
        { name: "m", version: "1", state: "READY" },
        { name: "m", version: "2", state: "UNAVAILABLE" },
        { name: "other", state: "UNAVAILABLE" },
      ],
      { staged: ["m"], logLines: [], userPaths },
    );
    expect(index.map((e) => e.reason)).toEqual([undefined, undefined, undefined]);
  });
});
