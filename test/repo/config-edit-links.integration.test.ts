import { execFileSync } from "node:child_process";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { applyConfigEditsToFile } from "../../src/repo/config-edit.js";
import { parseModelConfig } from "../../src/repo/parse.js";

// `tune --apply` writes into the user's repository. Another local user (uid 65534) who can change
// a folder it writes into must not get it to change any other file: not through a config.pbtxt
// that links into their folder, and not by swapping the temp file between its steps.

const asRoot = process.getuid?.() === 0;
const NOBODY = ["--reuid=65534", "--regid=65534", "--clear-groups"];
const TEXT = 'name: "m"\nbackend: "python"\nmax_batch_size: 4\n';
const edits = { maxBatchSize: 8 };

const temps: string[] = [];
afterAll(async () => {
  for (const d of temps) await fsp.rm(d, { recursive: true, force: true });
});
async function tempDir(prefix: string): Promise<string> {
  const d = await fsp.mkdtemp(path.join(os.tmpdir(), prefix));
  temps.push(d);
  return d;
}

/** A root-owned 0600 file elsewhere: what the other user is after. */
async function victim(): Promise<{ file: string; check: () => Promise<void> }> {
  const dir = await tempDir("config-edit-victim-");
  const file = path.join(dir, "secret");
  await fsp.writeFile(file, "private\n", { mode: 0o600 });
  const before = await fsp.stat(file);
  return {
    file,
    check: async () => {
      const after = await fsp.stat(file);
      expect(after.mode & 0o7777).toBe(0o600);
      expect([after.uid, after.gid]).toEqual([before.uid, before.gid]);
      expect(await fsp.readFile(file, "utf8")).toBe("private\n");
    },
  };
}

/** A model folder of ours whose config.pbtxt links to `target`. */
async function linkedConfig(target: string): Promise<string> {
  const dir = path.join(await tempDir("config-edit-repo-"), "m");
  await fsp.mkdir(dir);
  const file = path.join(dir, "config.pbtxt");
  await fsp.symlink(target, file);
  return file;
}

describe("applyConfigEditsToFile and folders another user can change", () => {
  it.skipIf(!asRoot)(
    "refuses to write through a link into a folder another user (uid 65534) owns, naming it and its owner",
    async () => {
      const theirs = await tempDir("config-edit-theirs-");
      await fsp.chown(theirs, 65534, 65534);
      const target = path.join(theirs, "config.pbtxt");
      await fsp.writeFile(target, TEXT);
      const file = await linkedConfig(target);
      const err = await applyConfigEditsToFile(file, edits, TEXT).catch((e: unknown) => e);
      expect(err).toMatchObject({ name: "ConfigEditError", reason: "unsafe-folder", file });
      expect((err as Error).message).toContain(`${theirs} is owned by`);
      expect((err as Error).message).toContain("uid 65534");
      expect((err as { hint: string }).hint).toContain("cp --remove-destination");
      expect(await fsp.readFile(target, "utf8")).toBe(TEXT);
      expect((await fsp.readdir(theirs)).sort()).toEqual(["config.pbtxt"]);
      // Reading through the link stays fine: lint's parser takes the text as it is.
      expect(parseModelConfig(await fsp.readFile(file, "utf8"), file).parsed).toBeDefined();
    },
  );

  it("refuses to write through a link into a folder every user can write (no sticky bit)", async () => {
    const open = await tempDir("config-edit-open-");
    await fsp.chmod(open, 0o777);
    const target = path.join(open, "config.pbtxt");
    await fsp.writeFile(target, TEXT);
    const file = await linkedConfig(target);
    await expect(applyConfigEditsToFile(file, edits, TEXT)).rejects.toMatchObject({
      reason: "unsafe-folder",
      message: expect.stringContaining(`${open} can be written by every user (mode 0777, no sticky bit)`),
    });
    expect(await fsp.readFile(target, "utf8")).toBe(TEXT);
    expect(await fsp.readdir(open)).toEqual(["config.pbtxt"]);
  });

  it.skipIf(!asRoot)(
    "keeps another user's link off a file of root's when that user swaps the temp file for it between the steps",
    async () => {
      // A repository folder uid 65534 owns (cloned by them, tuned by root): no link in the path,
      // so the edit goes ahead, and the other user plays its step once the temp file exists.
      const { file: secret, check } = await victim();
      const dir = await tempDir("config-edit-race-");
      await fsp.chown(dir, 65534, 65534);
      const file = path.join(dir, "config.pbtxt");
      await fsp.writeFile(file, TEXT);
      await fsp.chmod(file, 0o666);
      await fsp.chown(file, 65534, 65534);
      let swapped = "";
      const err = await applyConfigEditsToFile(file, edits, TEXT, {
        replaceSteps: {
          afterTempCreated: (tmp) => {
            execFileSync("setpriv", [
              ...NOBODY,
              "sh",
              "-c",
              'ln -s "$1" "$2.x" && mv -T "$2.x" "$2"',
              "sh",
              secret,
              tmp,
            ]);
            swapped = tmp;
          },
        },
      }).catch((e: unknown) => e);
      expect(swapped).not.toBe("");
      await check();
      expect(err).toMatchObject({ name: "ConfigEditError", reason: "unsafe-folder", file });
      expect((err as { hint: string }).hint).toMatch(/triton-dev-backup-.*\.bak/);
    },
  );
});
