import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { listModelDirs, requireModelRepository } from "../../src/repo/layout.js";
import { lintRepository } from "../../src/repo/lint.js";
import { StagingRepository } from "../../src/reload/stage.js";
import { RepositoryWatcher, type ModelChange } from "../../src/reload/watch.js";
import { ECHO_MODEL_PY, pythonConfig, pythonModel, removeTempRepos, tempRepo, writeFiles } from "../repo/helpers.js";
import { lintFacts } from "../../src/runtimes/kinds.js";

afterAll(removeTempRepos);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An editor's save: a new file renamed over the old one. */
async function save(file: string, text: string): Promise<void> {
  await fsp.writeFile(`${file}.tmp`, text);
  await fsp.rename(`${file}.tmp`, file);
}

describe("which entries of a repository are models", () => {
  it("is answered the same by lint, `up`, staging and the watcher", async () => {
    const repo = await tempRepo();
    const outside = await tempRepo();
    await writeFiles(repo, pythonModel("plain"));
    await writeFiles(outside, {
      "linked-src/config.pbtxt": pythonConfig("linked"),
      "linked-src/1/model.py": ECHO_MODEL_PY,
      "notes.txt": "n",
    });
    await fsp.symlink(path.join(outside, "linked-src"), path.join(repo, "linked"));
    await fsp.symlink(path.join(outside, "missing"), path.join(repo, "dangling"));
    await fsp.symlink(path.join(outside, "notes.txt"), path.join(repo, "filelink"));
    const models = ["linked", "plain"];

    expect(await listModelDirs(repo)).toEqual(models);
    expect(await requireModelRepository(repo)).toEqual(models);

    const lint = await lintRepository(repo, { ...lintFacts("local") });
    expect(lint.models.map((m) => [m.name, m.wouldLoad])).toEqual([
      ["linked", true],
      ["plain", true],
    ]);
    expect(lint.repositoryDiagnostics.map((d) => [d.severity, d.code, d.file])).toEqual([
      ["warning", "model-link-dangling", path.join(repo, "dangling")],
      ["warning", "model-link-not-directory", path.join(repo, "filelink")],
    ]);
    expect(lint.repositoryDiagnostics[0]!.message).toBe(
      `'dangling' is a symbolic link to ${path.join(outside, "missing")}, which does not exist: it is not a model folder, so it is not served`,
    );
    expect(lint.repositoryDiagnostics[1]!.message).toContain(`to ${path.join(outside, "notes.txt")}, a file`);

    const staging = new StagingRepository(await tempRepo());
    expect(await staging.init(repo)).toEqual(models);
    expect((await fsp.readdir(staging.repository)).sort()).toEqual(models);
    const snapshot = staging.snapshotDir("linked", staging.current("linked")!);
    expect((await fsp.lstat(snapshot)).isDirectory()).toBe(true);
    expect(await fsp.readFile(path.join(snapshot, "config.pbtxt"), "utf8")).toBe(pythonConfig("linked"));

    const changes: ModelChange[] = [];
    const watcher = new RepositoryWatcher(repo, { settleMs: 100 });
    watcher.onChange((c) => changes.push(c));
    await watcher.start();
    try {
      await save(path.join(outside, "linked-src", "1", "model.py"), ECHO_MODEL_PY + "\n# edited\n");
      await save(path.join(repo, "plain", "config.pbtxt"), pythonConfig("plain", undefined, 4));
      // The watcher follows no link to a file, and this one is no model: nothing is reported.
      await fsp.writeFile(path.join(outside, "notes.txt"), "edited");
      const deadline = Date.now() + 5_000;
      while (changes.length < 2 && Date.now() < deadline) await sleep(10);
      await sleep(400);
    } finally {
      await watcher.close();
    }
    expect(changes.map((c) => c.model).sort()).toEqual(models);
  });
});
