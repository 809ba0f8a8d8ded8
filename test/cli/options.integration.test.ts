import { describe, expect, it } from "vitest";
import { main } from "../../src/cli/main.js";
import type { Output } from "../../src/cli/output.js";
import { tempDir } from "../helpers/cli.js";

function capture(): Output & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return { stdout, stderr, out: (t) => void stdout.push(t), err: (t) => void stderr.push(t) };
}

// The rest of the command line's checks are in options.test.ts. `up` checks its ports once the
// runtime is ready: for the local runtime, after it has made sure of the managed Triton
// environment (which it installs when missing), so this one needs that environment.
describe("command line", () => {
  it("refuses two endpoints on one port before starting anything", async () => {
    const env = { ...process.env, TRITON_DEV_STATE_DIR: await tempDir("opt") };
    const o = capture();
    const models = await tempDir("m");
    await import("node:fs/promises").then((f) => f.mkdir(`${models}/a`));
    expect(await main(["up", "--models", models, "--http-port", "18123", "--grpc-port", "18123"], o, env)).toBe(2);
    expect(o.stderr.join("\n")).toMatch(/--grpc-port and --http-port are both 18123/);
  });
});
