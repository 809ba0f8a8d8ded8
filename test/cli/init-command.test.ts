import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runInit } from "../../src/cli/init-action.js";
import type { Output } from "../../src/cli/output.js";
import { UsageError, UserError } from "../../src/errors.js";
import { tempRepo, removeTempRepos } from "../repo/helpers.js";

afterAll(removeTempRepos);

function capture(): Output & { lines: string[] } {
  const lines: string[] = [];
  return { lines, out: (s) => void lines.push(s), err: (s) => void lines.push(s) };
}

describe("runInit", () => {
  it("scaffolds the model, checks it and says what to do next", async () => {
    const cwd = await tempRepo();
    const out = capture();
    expect(await runInit("models", { name: "my_model" }, out, cwd)).toBe(0);
    expect(out.lines).toEqual([
      "created models/my_model/config.pbtxt",
      "created models/my_model/1/model.py",
      "next: edit models/my_model/1/model.py, then `triton-dev lint models` and `triton-dev up --models models`",
    ]);
    expect(fs.existsSync(path.join(cwd, "models/my_model/1/model.py"))).toBe(true);
  });

  it("refuses a bad name as a usage error, and an existing model as a user error", async () => {
    const cwd = await tempRepo();
    await expect(runInit("models", { name: "../x" }, capture(), cwd)).rejects.toBeInstanceOf(UsageError);
    await runInit("models", { name: "m" }, capture(), cwd);
    const again = runInit("models", { name: "m" }, capture(), cwd);
    await expect(again).rejects.toBeInstanceOf(UserError);
    await expect(runInit("models", { name: "m" }, capture(), cwd)).rejects.toThrow("already exists");
  });
});
