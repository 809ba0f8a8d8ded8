import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { UserError, explainFsError, fsUserError } from "../src/errors.js";
import { removeTempRepos, tempRepo } from "./repo/helpers.js";

afterAll(removeTempRepos);

const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (err: unknown) => err,
  );

describe("filesystem errors as the user reads them", () => {
  it("explains a looping link and a link to nothing by what they are, not by permissions", async () => {
    const dir = await tempRepo();
    await fsp.symlink("a", path.join(dir, "a"));
    await fsp.symlink(path.join(dir, "none"), path.join(dir, "b"));
    const loop = explainFsError(await failure(fsp.readFile(path.join(dir, "a"))));
    expect(loop.code).toBe("ELOOP");
    expect(`${loop.is} ${loop.hint}`).not.toMatch(/permission/i);
    const dangling = explainFsError(await failure(fsp.readFile(path.join(dir, "b"))), { link: true });
    expect(dangling.code).toBe("ENOENT");
    expect(dangling.is).toContain("symbolic link to nothing");
  });

  it("turns a full disk met anywhere into a UserError, and leaves our own errors alone", async () => {
    // /dev/full answers every write with ENOSPC.
    const err = await failure(fsp.writeFile("/dev/full", "x"));
    const user = fsUserError(err);
    expect(user).toBeInstanceOf(UserError);
    expect(user!.message).toContain("no space left");
    expect(user!.cause).toBe(err);
    expect(fsUserError(new Error("a bug"))).toBeUndefined();
    expect(fsUserError(await failure(fsp.readFile("/nonexistent/x")))).toBeUndefined();
  });
});
