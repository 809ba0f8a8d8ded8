/**
 * Lint runs no code from the repository unless its caller gives it a completer: a python model
 * whose config depends on auto_complete_config is reported as not checked, and what that function
 * could still set is not counted against the model. (The real completer, and `lint
 * --run-model-code` and `up` with it, are in test/cli/lint-auto-complete.integration.test.ts.)
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { ConfigCompleter, CompletionRequest } from "../../src/repo/auto-complete-run.js";
import { lintRepository } from "../../src/repo/lint.js";
import { ECHO_MODEL_PY, pythonConfig, removeTempRepos, summary, tempRepo, writeFiles } from "./helpers.js";
import { lintFacts } from "../../src/runtimes/kinds.js";

afterAll(removeTempRepos);

/** A model.py that writes `marker` when imported, and completes INPUT0's dims and the output. */
function sideEffectModel(marker: string): string {
  return `import pathlib
pathlib.Path(${JSON.stringify(marker)}).write_text("imported")

${ECHO_MODEL_PY.replace(
  "class TritonPythonModel:",
  `class TritonPythonModel:
    @staticmethod
    def auto_complete_config(auto_complete_model_config):
        auto_complete_model_config.add_input({"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [-1]})
        auto_complete_model_config.add_output({"name": "OUTPUT0", "data_type": "TYPE_FP32", "dims": [-1]})
        return auto_complete_model_config
`,
)}`;
}

/** A completer that records what it was asked and answers as the function above would. */
function recordingCompleter(): ConfigCompleter & { asked: CompletionRequest[] } {
  const asked: CompletionRequest[] = [];
  return {
    asked,
    complete(req) {
      asked.push(req);
      const io = (name: string) => ({ name, data_type: "TYPE_FP32", dims: ["-1"] });
      return Promise.resolve({
        outcome: "completed",
        config: { ...req.config, input: [io("INPUT0")], output: [io("OUTPUT0")] },
      });
    },
  };
}

describe("lint without a completer runs no model code", () => {
  it("reports a config that auto_complete_config completes as not checked, a warning at the function, and imports nothing", async () => {
    const repo = await tempRepo();
    const marker = path.join(repo, "imported.txt");
    const model = sideEffectModel(marker);
    // INPUT0 without dims: the function fills them in, so the file alone is not wrong.
    await writeFiles(repo, {
      "m/config.pbtxt": pythonConfig("m", 'input [ { name: "INPUT0" data_type: TYPE_FP32 } ]\n', 0),
      "m/1/model.py": model,
    });
    const r = await lintRepository(repo, { ...lintFacts("local") });
    expect(fs.existsSync(marker)).toBe(false);
    expect(r.errorCount).toBe(0);
    const m = r.models[0]!;
    expect(m.wouldLoad).toBe(true);
    expect(m.completed).toBeUndefined();
    const notRun = m.diagnostics.find((d) => d.code === "auto-complete-not-run")!;
    expect(notRun).toMatchObject({
      severity: "warning",
      file: path.join(repo, "m", "1", "model.py"),
      line: model.split("\n").findIndex((l) => l.includes("def auto_complete_config")) + 1,
    });
    expect(notRun.message).toContain("not checked: completing this config runs 1/model.py");
    expect(notRun.hint).toContain("--run-model-code");
    // The finding on a field the function may set is kept, as a warning that says so.
    const dims = m.diagnostics.find((d) => d.code === "io-dims-missing")!;
    expect(dims.severity).toBe("warning");
    expect(dims.message).toContain("(unless auto_complete_config in 1/model.py sets it: not run)");
  });

  it("a completer that cannot wall the code in (refused): not checked, a warning saying why and what to do", async () => {
    const repo = await tempRepo();
    const model = sideEffectModel(path.join(repo, "imported.txt"));
    await writeFiles(repo, {
      "m/config.pbtxt": pythonConfig("m", 'input [ { name: "INPUT0" data_type: TYPE_FP32 } ]\n', 0),
      "m/1/model.py": model,
    });
    const refusing: ConfigCompleter = {
      complete: () =>
        Promise.resolve({
          outcome: "refused",
          why: "it cannot be walled in here (unshare: unshare failed: Operation not permitted)",
          hint: "Allow unprivileged user namespaces.",
        }),
    };
    const r = await lintRepository(repo, { ...lintFacts("local"), completer: refusing });
    expect(r.errorCount).toBe(0);
    const notRun = r.models[0]!.diagnostics.find((d) => d.code === "auto-complete-not-run")!;
    expect(notRun).toMatchObject({ severity: "warning", file: path.join(repo, "m", "1", "model.py") });
    expect(notRun.message).toBe(
      "not checked: completing this config runs 1/model.py (its auto_complete_config), and it cannot be walled in here (unshare: unshare failed: Operation not permitted), so the config is checked as written",
    );
    expect(notRun.hint).toBe("Allow unprivileged user namespaces.");
    const dims = r.models[0]!.diagnostics.find((d) => d.code === "io-dims-missing")!;
    expect(dims.severity).toBe("warning");
  });

  it("still refuses what the function cannot set", async () => {
    const repo = await tempRepo();
    const marker = path.join(repo, "imported.txt");
    await writeFiles(repo, {
      "m/config.pbtxt": pythonConfig("m") + "instance_group [ { kind: KIND_GPU gpus: [ -1 ] } ]\n",
      "m/1/model.py": sideEffectModel(marker),
    });
    const r = await lintRepository(repo, { ...lintFacts("local"), gpuAvailable: true });
    expect(fs.existsSync(marker)).toBe(false);
    expect(summary(r.diagnostics).filter((s) => s.startsWith("error"))).toEqual([
      expect.stringMatching(/^error gpu-id-invalid@/),
    ]);
  });

  it("a model without config.pbtxt: not checked, and the missing config said as before", async () => {
    const repo = await tempRepo();
    const marker = path.join(repo, "imported.txt");
    await writeFiles(repo, { "m/1/model.py": sideEffectModel(marker) });
    const r = await lintRepository(repo, {});
    expect(fs.existsSync(marker)).toBe(false);
    expect(r.errorCount).toBe(0);
    expect(r.models[0]!.diagnostics.map((d) => `${d.severity} ${d.code}`).sort()).toEqual([
      "warning auto-complete-not-run",
      "warning config-missing",
    ]);
    expect(r.models[0]!.backend).toBe("python");
  });

  it("with a completer, the config it completes is checked instead, with no not-checked warning", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, {
      "m/config.pbtxt": pythonConfig("m", 'input [ { name: "INPUT0" data_type: TYPE_FP32 } ]\n', 0),
      "m/1/model.py": sideEffectModel(path.join(repo, "imported.txt")),
    });
    const completer = recordingCompleter();
    const r = await lintRepository(repo, { completer });
    expect(completer.asked.map((a) => a.model)).toEqual(["m"]);
    expect(r.models[0]).toMatchObject({ completed: true, diagnostics: [] });
  });

  it("an ordinary python model is not affected", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { "m/config.pbtxt": pythonConfig("m"), "m/1/model.py": ECHO_MODEL_PY });
    const r = await lintRepository(repo, {});
    expect(r.models[0]!.diagnostics).toEqual([]);
  });
});
