import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, freePorts, portArgs, runCli, tempDir, testEnv } from "../helpers/cli.js";
import { OFFSET_MODEL, writeOffsetModel } from "../helpers/offset-model.js";
import { LspClient } from "./client.js";

// The live server's verdict: a real `triton-dev up --detach` on the local runtime serves the
// repository, `triton-dev lsp` reads the run's state, and Triton's own reason for a model it could
// not load shows on the line that caused it, then clears when the fix loads.

/** model.py whose initialize raises, on the line RAISE_LINE (1-based). */
const RAISING_MODEL = OFFSET_MODEL.replace(
  "class TritonPythonModel:\n",
  "class TritonPythonModel:\n    def initialize(self, args):\n        raise ValueError('the offset table is missing')\n\n",
);
const RAISE_LINE = RAISING_MODEL.split("\n").findIndex((l) => l.includes("raise ValueError")) + 1;

describe("triton-dev lsp: the verdict of a running `up`", () => {
  let repo: string;
  let env: NodeJS.ProcessEnv;
  let client: LspClient;

  beforeAll(async () => {
    repo = await tempDir("lsp-live");
    await writeOffsetModel(repo, "1");
    env = await testEnv();
    const up = await runCli(["up", "--detach", "--models", repo, ...portArgs(await freePorts())], env);
    expect(up.code, up.stdout + up.stderr).toBe(0);
    client = LspClient.spawn(process.execPath, [CLI, "lsp", "--stdio"], env);
    await client.initialize(repo);
  }, 200_000);

  afterAll(async () => {
    await client?.stop();
    if (env) await runCli(["down"], env, 60_000);
    await fsp.rm(repo, { recursive: true, force: true });
  }, 90_000);

  it("Triton's load failure shows on the model.py line of its traceback, and clears when the fix loads", async () => {
    const config = path.join(repo, "offset", "config.pbtxt");
    const modelPy = path.join(repo, "offset", "1", "model.py");
    await client.open(config, await fsp.readFile(config, "utf8"));
    await client.waitForDiagnostics(config, (ds) => ds.length === 0, 30_000);

    // Saved broken: lint passes it (model.py is the model's own code), Triton's load fails.
    await fsp.writeFile(modelPy, RAISING_MODEL);
    const [d] = await client.waitForDiagnostics(modelPy, (ds) => ds.length > 0, 90_000);
    expect(d!.source).toBe("triton");
    expect(d!.code).toBe("triton-load-failed");
    expect(d!.range.start.line).toBe(RAISE_LINE - 1);
    expect(d!.message).toMatch(
      /^Triton \(http:\/\/127\.0\.0\.1:\d+\) could not load 'offset': .*the offset table is missing/s,
    );
    // The reason names the user's file, not the run's staged copy.
    expect(d!.message).toContain(modelPy);
    // The open config says so too, pointing at the line.
    const [onConfig] = await client.waitForDiagnostics(config, (ds) => ds.length > 0);
    expect(onConfig!.message).toMatch(
      new RegExp(`could not load 'offset': .*\\(raised at 1/model.py:${RAISE_LINE}\\)`, "s"),
    );

    // The fix saved: Triton loads it and the finding goes.
    await fsp.writeFile(modelPy, OFFSET_MODEL);
    await client.waitForDiagnostics(modelPy, (ds) => ds.length === 0, 90_000);
    await client.waitForDiagnostics(config, (ds) => ds.length === 0);
  }, 200_000);

  it("a refused save shows `up`'s refusal on the config, and clears when a good save loads", async () => {
    const config = path.join(repo, "offset", "config.pbtxt");
    const good = await fsp.readFile(config, "utf8");
    // Closed in the editor: what the editor shows for it comes from lint of the file and from the run.
    await client.close(config);
    await fsp.writeFile(config, good.replace("max_batch_size: 8", "max_batch_size: -3"));
    // The watcher's lint of the saved file, and the run's refusal of it.
    const ds = await client.waitForDiagnostics(
      config,
      (x) => x.some((d) => d.code === "triton-refused") && x.some((d) => d.code === "max-batch-size-negative"),
      90_000,
    );
    const refusal = ds.find((d) => d.code === "triton-refused")!;
    expect(refusal.message).toMatch(/refused the last save of 'offset'.*keeps serving the last good version/);
    expect(refusal.range.start.line).toBe(2);
    await fsp.writeFile(config, good);
    await client.waitForDiagnostics(config, (x) => x.length === 0, 90_000);
  }, 200_000);
});
