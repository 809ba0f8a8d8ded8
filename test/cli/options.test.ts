import { afterAll, describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import type { Output } from "../../src/cli/output.js";
import { removeTempDirs, tempDir } from "../helpers/cli.js";

afterAll(removeTempDirs);

function capture(): Output & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return { stdout, stderr, out: (t) => void stdout.push(t), err: (t) => void stderr.push(t) };
}

describe("command line", () => {
  it("has --help on every command", async () => {
    for (const cmd of ["up", "down", "status", "logs", "setup", "doctor"]) {
      const o = capture();
      expect(await main([cmd, "--help"], o)).toBe(0);
      expect(o.stdout.join("\n")).toMatch(new RegExp(`Usage: triton-dev ${cmd}`));
    }
  });

  it("rejects a bad port with exit 2 and names the flag", async () => {
    const o = capture();
    expect(await main(["up", "--http-port", "70000"], o)).toBe(2);
    expect(o.stderr.join("\n")).toMatch(/--http-port must be a port number 1-65535, got '70000'/);
  });

  it("rejects an empty --models and a poll interval Triton cannot take, naming the flag", async () => {
    let o = capture();
    expect(await main(["up", "--models", ""], o)).toBe(2);
    expect(o.stderr.join("\n")).toMatch(/--models is empty; give the model repository's folder/);
    o = capture();
    expect(await main(["up", "--poll-secs", String(2 ** 31)], o)).toBe(2);
    expect(o.stderr.join("\n")).toMatch(/--poll-secs must be at most 86400, got '2147483648'/);
  });

  it("rejects an unknown runtime and reload mode", async () => {
    let o = capture();
    expect(await main(["up", "--runtime", "podman"], o)).toBe(2);
    expect(o.stderr.join("\n")).toMatch(/Allowed choices are auto, local, docker, kind/);
    o = capture();
    expect(await main(["up", "--reload", "sometimes"], o)).toBe(2);
    expect(o.stderr.join("\n")).toMatch(/poll, explicit/);
  });

  it("says plainly when there is nothing to stop, show or tail", async () => {
    const env = { ...process.env, TRITON_DEV_STATE_DIR: await tempDir("none") };
    let o = capture();
    expect(await main(["down"], o, env)).toBe(0);
    expect(o.stdout.join("\n")).toMatch(/nothing is running/);
    o = capture();
    expect(await main(["status"], o, env)).toBe(1);
    expect(o.stdout.join("\n")).toMatch(/nothing is running/);
    o = capture();
    expect(await main(["status", "--json"], o, env)).toBe(1);
    expect(JSON.parse(o.stdout.join(""))).toEqual({ running: false });
    o = capture();
    expect(await main(["logs"], o, env)).toBe(1);
    expect(o.stderr.join("\n")).toMatch(/nothing is running, so there is no log to show/);
  });

  it("explains a missing or empty model repository", async () => {
    const env = { ...process.env, TRITON_DEV_STATE_DIR: await tempDir("mm") };
    let o = capture();
    expect(await main(["up", "--models", "/nonexistent/models"], o, env)).toBe(1);
    expect(o.stderr.join("\n")).toMatch(/model repository \/nonexistent\/models does not exist/);
    expect(o.stderr.join("\n")).toMatch(/hint: .*--models DIR/);
    const empty = await tempDir("empty");
    o = capture();
    expect(await main(["up", "--models", empty], o, env)).toBe(1);
    expect(o.stderr.join("\n")).toMatch(/holds no models/);
    expect(o.stderr.join("\n")).toMatch(/triton-dev init/);
  });
});
