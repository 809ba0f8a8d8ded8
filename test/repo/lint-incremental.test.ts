import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { RepositoryLint, lintModel, lintRepository } from "../../src/repo/lint.js";
import { pythonConfig, pythonModel, removeTempRepos, tempRepo, writeFiles } from "./helpers.js";

afterAll(removeTempRepos);

const PIPE = `name: "pipe"
platform: "ensemble"
max_batch_size: 8
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] } ]
ensemble_scheduling { step [ { model_name: "echo" model_version: -1
  input_map { key: "INPUT0" value: "IN" } output_map { key: "OUTPUT0" value: "OUT" } } ] }
`;

const opts = { autoComplete: false };

describe("RepositoryLint (an editor's lint, kept between changes)", () => {
  it("says what lintRepository and lintModel say, after each change it is told of", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, {
      ...pythonModel("echo"),
      ...pythonModel("other"),
      "pipe/config.pbtxt": PIPE,
      "pipe/1/": "",
    });
    const kept = new RepositoryLint(repo, opts);
    // The editor's: without the source maps of models that are no ensemble, the same answers.
    const lean = new RepositoryLint(repo, opts, undefined, true);
    await kept.refresh();
    await lean.refresh();
    expect(kept.lintRepository()).toEqual(await lintRepository(repo, opts));
    expect(lean.lintRepository()).toEqual(kept.lintRepository());

    // The step model loses the output the ensemble maps: the ensemble's error comes with the model's lint.
    await fsp.writeFile(path.join(repo, "echo/config.pbtxt"), pythonConfig("echo").replace("OUTPUT0", "RESULT"));
    await kept.refresh(["echo"]);
    await lean.refresh(["echo"]);
    const after = kept.lintModel("echo");
    expect(after).toEqual(await lintModel(repo, "echo", opts));
    expect(lean.lintModel("echo")).toEqual(after);
    expect(after.models.map((m) => m.name)).toEqual(["echo", "pipe"]);
    expect(after.errorCount).toBeGreaterThan(0);

    // Told again with nothing changed, the rules across models do not add their findings twice.
    await kept.refresh(["other"]);
    await kept.refresh(["other"]);
    expect(kept.lintModel("echo")).toEqual(after);

    // A model removed and one added are seen on the next refresh.
    await fsp.rm(path.join(repo, "other"), { recursive: true });
    await writeFiles(repo, pythonModel("third"));
    await kept.refresh();
    expect(kept.modelNames()).toEqual(["echo", "pipe", "third"]);
    expect(kept.lintRepository()).toEqual(await lintRepository(repo, opts));

    // Told only of the entries a watcher saw change, not listing the folder again: the same.
    await fsp.rm(path.join(repo, "third"), { recursive: true });
    await writeFiles(repo, pythonModel("fourth"));
    await kept.refresh(["third", "fourth"], { relist: "entries" });
    expect(kept.modelNames()).toEqual(["echo", "fourth", "pipe"]);
    expect(kept.lintRepository()).toEqual(await lintRepository(repo, opts));
    // The step model removed: the ensemble that runs it says so, told of the model alone.
    await fsp.rm(path.join(repo, "echo"), { recursive: true });
    await kept.refresh(["echo"], { relist: "entries" });
    expect(kept.lintModel("echo")).toEqual(await lintModel(repo, "echo", opts));
    expect(kept.lintRepository()).toEqual(await lintRepository(repo, opts));
  });

  it("reads an open config's unsaved text in place of its file, and a text past the size limit as lint reads such a file", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, pythonModel("echo"));
    const buffers = new Map<string, string>();
    const kept = new RepositoryLint(repo, opts, (f) => buffers.get(f));
    await kept.refresh();
    expect(kept.lintModel("echo").errorCount).toBe(0);
    buffers.set(path.join(repo, "echo/config.pbtxt"), pythonConfig("echo").replace("TYPE_FP32", "TYPE_FP33"));
    await kept.refresh(["echo"]);
    expect(kept.lintModel("echo").diagnostics.map((d) => d.code)).toContain("config-enum");
    buffers.set(path.join(repo, "echo/config.pbtxt"), "#".repeat(9 * 1024 * 1024));
    await kept.refresh(["echo"]);
    const [d] = kept.lintModel("echo").diagnostics;
    expect(d?.code).toBe("config-unreadable");
    expect(d?.message).toMatch(/9\.0 MB, far larger than any config/);
  });
});
