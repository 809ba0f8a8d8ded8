import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { UserError } from "../../src/errors.js";
import { isModelDir, listModelDirs, readRepositoryEntries, requireModelRepository } from "../../src/repo/layout.js";
import { pythonModel, removeTempRepos, tempRepo, writeFiles } from "./helpers.js";

afterAll(removeTempRepos);

/** Every kind of top-level entry the lister has to decide on. */
async function mixedRepository(): Promise<{ repo: string; outside: string }> {
  const repo = await tempRepo();
  const outside = await tempRepo();
  await writeFiles(repo, { ...pythonModel("plain"), "README.md": "notes", ".git/HEAD": "x", "__pycache__/a.pyc": "" });
  await writeFiles(outside, { ...pythonModel("shared"), "notes.txt": "n" });
  await fsp.symlink(path.join(outside, "shared"), path.join(repo, "linked"));
  await fsp.symlink("plain", path.join(repo, "alias"));
  await fsp.symlink(path.join(outside, "missing"), path.join(repo, "dangling"));
  await fsp.symlink(path.join(outside, "notes.txt"), path.join(repo, "filelink"));
  await fsp.symlink("loop", path.join(repo, "loop"));
  await fsp.symlink(path.join(outside, "shared"), path.join(repo, ".hidden"));
  return { repo, outside };
}

describe("the model lister", () => {
  it("lists directories and links to directories, inside or outside the repository", async () => {
    const { repo } = await mixedRepository();
    expect(await listModelDirs(repo)).toEqual(["alias", "linked", "plain"]);
  });

  it("names the links that are not model folders, and leaves plain files and ignored names out", async () => {
    const { repo, outside } = await mixedRepository();
    const { notModels } = await readRepositoryEntries(repo);
    expect(notModels).toEqual([
      {
        name: "dangling",
        path: path.join(repo, "dangling"),
        target: path.join(outside, "missing"),
        why: "dangling link",
        code: "ENOENT",
      },
      {
        name: "filelink",
        path: path.join(repo, "filelink"),
        target: path.join(outside, "notes.txt"),
        why: "links to a file",
      },
      { name: "loop", path: path.join(repo, "loop"), target: "loop", why: "dangling link", code: "ELOOP" },
    ]);
  });

  it("answers for one entry as the listing does", async () => {
    const { repo } = await mixedRepository();
    const listed = new Set(await listModelDirs(repo));
    for (const name of await fsp.readdir(repo)) expect(await isModelDir(repo, name), name).toBe(listed.has(name));
    expect(await isModelDir(repo, "absent")).toBe(false);
  });

  it("lets `up` serve a repository whose only model folder is a link", async () => {
    const repo = await tempRepo();
    const outside = await tempRepo();
    await writeFiles(outside, pythonModel("m"));
    await fsp.symlink(path.join(outside, "m"), path.join(repo, "m"));
    expect(await requireModelRepository(repo)).toEqual(["m"]);
  });

  it("refuses a repository with only links that are not model folders", async () => {
    const repo = await tempRepo();
    await fsp.symlink(path.join(repo, "missing"), path.join(repo, "m"));
    await expect(requireModelRepository(repo)).rejects.toThrow(/holds no models/);
  });

  it("throws a UserError for a folder it cannot read", async () => {
    const repo = await tempRepo();
    await expect(listModelDirs(path.join(repo, "absent"))).rejects.toBeInstanceOf(UserError);
  });
});
