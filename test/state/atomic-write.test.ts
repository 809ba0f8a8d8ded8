import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { replaceFileAtomic } from "../../src/state/atomic-write.js";

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await fsp.rm(d, { recursive: true, force: true });
});

describe("replaceFileAtomic", () => {
  it("replaces the file in one rename with the old one's exact mode (past the umask) and owner", async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), "atomic-write-"));
    dirs.push(dir);
    const file = path.join(dir, "config.pbtxt");
    await fsp.writeFile(file, "old");
    // Group and other write bits: a umask of 022 would take them off a plain write.
    await fsp.chmod(file, 0o666);
    const root = process.getuid?.() === 0;
    if (root) await fsp.chown(file, 2345, 5432);
    const before = await fsp.stat(file);
    await replaceFileAtomic(file, "new", { mode: before.mode & 0o7777, uid: before.uid, gid: before.gid });
    const after = await fsp.stat(file);
    expect(await fsp.readFile(file, "utf8")).toBe("new");
    expect(after.ino).not.toBe(before.ino);
    expect(after.mode & 0o7777).toBe(0o666);
    if (root) expect([after.uid, after.gid]).toEqual([2345, 5432]);
    expect(await fsp.readdir(dir)).toEqual(["config.pbtxt"]);
  });

  it("leaves the old file and no temp file when the write fails", async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), "atomic-write-"));
    dirs.push(dir);
    const file = path.join(dir, "config.pbtxt");
    await fsp.writeFile(file, "old");
    // A folder where the file should be: the rename fails after the temp file is written.
    const target = path.join(dir, "sub");
    await fsp.mkdir(path.join(target, "x"), { recursive: true });
    await expect(replaceFileAtomic(target, "new", { mode: 0o644, uid: 0, gid: 0 })).rejects.toThrow();
    expect((await fsp.readdir(dir)).sort()).toEqual(["config.pbtxt", "sub"]);
    expect(await fsp.readFile(file, "utf8")).toBe("old");
  });
});
