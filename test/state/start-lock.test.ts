import { spawn } from "node:child_process";
import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { resolvePaths } from "../../src/config/paths.js";
import { UntrustedFolderError } from "../../src/config/folder-trust.js";
import { UserError } from "../../src/errors.js";
import { acquireStartLock } from "../../src/state/start-lock.js";
import { removeTempDirs, tempDir } from "../helpers/cli.js";

afterAll(removeTempDirs);

describe("the start lock", () => {
  const children: Array<ReturnType<typeof spawn>> = [];
  afterEach(() => {
    for (const c of children.splice(0)) c.kill("SIGKILL");
  });

  it("refuses while another live `up` holds it, naming its pid and folder; free again once released", async () => {
    const paths = resolvePaths({ TRITON_DEV_STATE_DIR: await tempDir("lock"), TRITON_DEV_HOME: "/unused" });
    // Another node process of ours stands in for the first `up`.
    const other = spawn(process.execPath, ["-e", "setTimeout(() => {}, 30000)"], { stdio: "ignore" });
    children.push(other);
    await fs.mkdir(paths.stateDir, { recursive: true });
    await fs.writeFile(
      path.join(paths.stateDir, "start.lock"),
      JSON.stringify({ pid: other.pid, modelsDir: "/first/models", since: "2026-12-01T00:00:00.000Z" }),
    );
    const err = await acquireStartLock(paths, "/second/models").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    expect((err as Error).message).toBe(
      `another \`triton-dev up\` (pid ${other.pid}, models /first/models) is starting on this state folder since 2026-12-01T00:00:00.000Z`,
    );
    other.kill("SIGKILL");
    await new Promise((r) => other.once("exit", r));
    // Its holder is gone: taken over, and released twice without harm.
    const lock = await acquireStartLock(paths, "/second/models");
    expect(JSON.parse(await fs.readFile(path.join(paths.stateDir, "start.lock"), "utf8"))).toMatchObject({
      pid: process.pid,
      modelsDir: "/second/models",
    });
    await lock.release();
    await lock.release();
    await expect(fs.access(path.join(paths.stateDir, "start.lock"))).rejects.toThrow();
  });

  it("makes a new state folder 0700 (its run folders hold the models' code and logs), and refuses one others can write", async () => {
    const root = await tempDir("lock-mode");
    const paths = resolvePaths({ TRITON_DEV_STATE_DIR: path.join(root, "state"), TRITON_DEV_HOME: "/unused" });
    await (await acquireStartLock(paths, "/models")).release();
    expect((await fs.stat(paths.stateDir)).mode & 0o777).toBe(0o700);
    await fs.chmod(root, 0o777);
    const err = await acquireStartLock(paths, "/models").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UntrustedFolderError);
    expect((err as Error).message).toContain(`${root} can be written by every user`);
    await fs.chmod(root, 0o700);
    await fs.rm(root, { recursive: true, force: true });
  });
});
