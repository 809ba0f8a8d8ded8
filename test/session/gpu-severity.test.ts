import { afterAll, describe, expect, it } from "vitest";
import { lintRepository } from "../../src/repo/lint.js";
import { lintOptionsFor } from "../../src/session/session.js";
import { ECHO_IO, pythonConfig, pythonModel, removeTempRepos, tempRepo, writeFiles } from "../repo/helpers.js";

afterAll(removeTempRepos);

describe("KIND_GPU on a machine without a GPU", () => {
  it("has one severity in `lint` and at `up`: a warning, the model not counted as loading here", async () => {
    const repo = await tempRepo();
    const gpu = pythonConfig("g", `${ECHO_IO}\ninstance_group [ { kind: KIND_GPU } ]\n`);
    await writeFiles(repo, { ...pythonModel("g", gpu), ...pythonModel("c") });
    // What the lint command passes, and what `up` and its watcher lint with on a server without GPUs.
    const asLint = await lintRepository(repo, { gpuMissingSeverity: "warning", gpuAvailable: false });
    const asUp = await lintRepository(repo, lintOptionsFor("local", 0));
    for (const r of [asLint, asUp]) {
      const g = r.models.find((m) => m.name === "g")!;
      expect(g.diagnostics.map((d) => [d.severity, d.code])).toEqual([["warning", "gpu-unavailable"]]);
      expect(g.wouldLoad).toBe(false);
      expect(r.errorCount).toBe(0);
    }
  });
});
