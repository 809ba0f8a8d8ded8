import path from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ECHO_ONNX, pythonConfig, pythonModel, removeTempRepos, tempRepo, writeFiles } from "../repo/helpers.js";
import { LspClient } from "./client.js";

// Settings at runtime: what `lint` takes as flags (--gpu/--no-gpu, auto-complete) sent by the
// editor at initialize and through workspace/didChangeConfiguration; open configs are linted again.

const GPU_CONFIG = `${pythonConfig("echo")}instance_group [ { kind: KIND_GPU count: 1 } ]\n`;

let client: LspClient | undefined;
afterEach(async () => {
  await client?.stop();
  client = undefined;
});
afterAll(removeTempRepos);

async function start(o: Parameters<typeof LspClient.inProcess>[0], initializationOptions?: unknown) {
  const repo = await tempRepo();
  await writeFiles(repo, pythonModel("echo", GPU_CONFIG));
  const c = LspClient.inProcess({ watch: false, ...o });
  client = c;
  await c.connection.sendRequest("initialize", {
    processId: process.pid,
    rootUri: c.uri(repo),
    capabilities: {},
    ...(initializationOptions !== undefined ? { initializationOptions } : {}),
  });
  await c.connection.sendNotification("initialized", {});
  return { c, f: path.join(repo, "echo", "config.pbtxt") };
}

const codes = (ds: Array<{ code?: string | number }>) => ds.map((d) => d.code);

describe("settings", () => {
  it("KIND_GPU on a machine without a GPU: the CLI's warning, gone once the editor says there is one", async () => {
    // The machine's GPU count comes as a parameter: this one says none, as `lint` would read it.
    const { c, f } = await start({ gpuCount: async () => 0 });
    await c.open(f, GPU_CONFIG);
    let ds = await c.waitForDiagnostics(f, (d) => d.length > 0);
    expect(codes(ds)).toEqual(["gpu-unavailable"]);
    expect(ds[0]!.severity).toBe(2);
    expect(ds[0]!.message).toMatch(/asks for KIND_GPU, but this machine has no GPU/);

    await c.connection.sendNotification("workspace/didChangeConfiguration", {
      settings: { "triton-dev": { gpu: true } },
    });
    ds = await c.waitForDiagnostics(f, (d) => d.length === 0);
    expect(ds).toEqual([]);
    // And back: "auto" is the machine's answer again.
    await c.connection.sendNotification("workspace/didChangeConfiguration", {
      settings: { "triton-dev": { gpu: "auto" } },
    });
    await c.waitForDiagnostics(f, (d) => codes(d).includes("gpu-unavailable"));
  });

  it("initializationOptions set them from the start; a wrong value is said and ignored", async () => {
    const { c, f } = await start({}, { gpu: false });
    const messages: string[] = [];
    c.connection.onNotification("window/showMessage", (p: { message: string }) => void messages.push(p.message));
    await c.open(f, GPU_CONFIG);
    await c.waitForDiagnostics(f, (d) => codes(d).includes("gpu-unavailable"));

    await c.connection.sendNotification("workspace/didChangeConfiguration", {
      settings: { tritonDev: { autoComplete: "sometimes", gpu: true } },
    });
    await c.waitForDiagnostics(f, (d) => d.length === 0);
    expect(messages).toEqual([expect.stringMatching(/^triton-dev setting 'autoComplete': "sometimes" is not valid/)]);
  });

  it("auto-complete off: an ONNX config without its inputs and outputs is an error, as `lint --disable-auto-complete-config` says", async () => {
    const { c, f } = await start({ gpuCount: async () => 1 });
    const repo = path.dirname(path.dirname(f));
    const onnx = path.join(repo, "onnx_echo", "config.pbtxt");
    const text = 'name: "onnx_echo"\nbackend: "onnxruntime"\nmax_batch_size: 8\n';
    await writeFiles(repo, { "onnx_echo/config.pbtxt": text, "onnx_echo/1/model.onnx": ECHO_ONNX });
    await c.open(onnx, text);
    await c.waitForDiagnostics(onnx, (d) => !d.some((x) => x.severity === 1));
    await c.connection.sendNotification("workspace/didChangeConfiguration", {
      settings: { "triton-dev": { autoComplete: false } },
    });
    const ds = await c.waitForDiagnostics(onnx, (d) => d.some((x) => x.severity === 1));
    expect(
      ds
        .filter((d) => d.severity === 1)
        .map((d) => d.message)
        .join("\n"),
    ).toMatch(/input|output/);
  });
});
