import { spawn } from "node:child_process";
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CLI, freePorts, portArgs, runCli, tempDir, testEnv } from "../helpers/cli.js";

const CONFIG = `name: "plain"
backend: "python"
max_batch_size: 0
input [ { name: "X" data_type: TYPE_FP32 dims: [ 2 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 2 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]
`;

const MODEL = `import triton_python_backend_utils as pb_utils

class TritonPythonModel:
    def execute(self, requests):
        return [pb_utils.InferenceResponse([pb_utils.Tensor("Y", pb_utils.get_input_tensor_by_name(r, "X").as_numpy())]) for r in requests]
`;

/**
 * `up` with its output going to a pipe, as a script or a CI log gets it, and with CI unset so
 * that only the missing terminal decides: it must print plain lines, never the dashboard.
 */
async function upWithoutTerminal(
  extra: string[],
  untilLine: RegExp,
): Promise<{ stdout: string; stderr: string; code: number | null }> {
  const repo = await tempDir("plain");
  await fsp.mkdir(path.join(repo, "plain", "1"), { recursive: true });
  await fsp.writeFile(path.join(repo, "plain", "config.pbtxt"), CONFIG);
  await fsp.writeFile(path.join(repo, "plain", "1", "model.py"), MODEL);
  const env = await testEnv();
  delete env.CI;
  delete env.CONTINUOUS_INTEGRATION;
  envs.push(env);
  const child = spawn(process.execPath, [CLI, "up", "--models", repo, ...portArgs(await freePorts()), ...extra], {
    env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const exited = new Promise<number | null>((r) =>
    child.once("exit", (code, signal) => r(code ?? (signal ? -1 : null))),
  );
  const seen = new Promise<void>((resolve, reject) => {
    const t = setTimeout(
      () => reject(new Error(`no line matching ${untilLine} within 180 s:\n${stdout}\n${stderr}`)),
      180_000,
    );
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
      if (untilLine.test(stdout)) {
        clearTimeout(t);
        resolve();
      }
    });
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  });
  try {
    await seen;
  } finally {
    child.kill("SIGINT");
  }
  const code = await exited;
  return { stdout, stderr, code };
}

const envs: NodeJS.ProcessEnv[] = [];

describe("up without a terminal prints the events as lines (real Triton)", () => {
  afterAll(async () => {
    for (const env of envs) await runCli(["down"], env, 60_000);
  }, 120_000);

  it("prints plain lines, no dashboard, and stops on SIGINT", async () => {
    const r = await upWithoutTerminal([], /serving; press Ctrl-C to stop/);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    // No escape sequence at all: no alternate screen, no cursor movement, no colour.
    expect(r.stdout).not.toMatch(/\x1b/);
    expect(r.stdout).toMatch(/^Triton is up in \d+\.\d s: 1 of 1 model READY \(plain\)$/m);
    expect(r.stdout).toMatch(/^ {2}plain\s+v1\s+READY/m);
    expect(r.stdout).toMatch(/^watching .* \(poll mode\)/m);
    expect(r.stdout).toMatch(/^stopping Triton \(received SIGINT\)$/m);
    expect(r.stdout).toMatch(/^stopped; nothing left running$/m);
  }, 240_000);

  it("prints JSON lines with --json", async () => {
    const r = await upWithoutTerminal(["--json"], /"type":"watching"/);
    expect(r.code).toBe(0);
    const events = r.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string });
    expect(events.map((e) => e.type)).toEqual(
      expect.arrayContaining(["staged", "starting", "ready", "watching", "stopping", "stopped"]),
    );
  }, 240_000);
});
