import { execFile } from "node:child_process";
import * as grpc from "@grpc/grpc-js";
import fs from "node:fs/promises";
import path from "node:path";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePorts, portArgs, runCli, tempDir, testEnv } from "../helpers/cli.js";

/**
 * Issue [hardening] 1: the key of Triton's model-repository API never leaves the user. Another
 * local user (uid 65534, through setpriv) looks everywhere a local user can: every process's
 * command line, the state folder's readable files, the server's environment; then tries the API.
 */
const NOBODY = ["--reuid=65534", "--regid=65534", "--clear-groups"];
const asRoot = process.getuid?.() === 0;

function run(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env, maxBuffer: 64 * 1024 * 1024, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) || 1 : 0, out: `${stdout}${stderr}` }),
    );
  });
}

/**
 * Node as uid 65534 running `script` (an ES module body); its stdout is the result. What it looks
 * for comes in its environment, never on its own command line, which it reads too.
 */
function asNobody(script: string, lookFor = ""): Promise<{ code: number; out: string }> {
  return run("setpriv", [...NOBODY, process.execPath, "--input-type=module", "-e", script], {
    PATH: process.env.PATH,
    LOOK_FOR: lookFor,
  });
}

const grpcRepositoryIndex = (address: string, key?: string) => grpcCall(address, "RepositoryIndex", key);

/** A unary gRPC call of Triton's service (an empty request unless given); resolves with the status code. */
function grpcCall(address: string, method: string, key?: string, request: Buffer = Buffer.alloc(0)): Promise<number> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  // Triton 2.51's gRPC side expects the restricted protocol's header with this prefix.
  if (key) md.set("triton-grpc-protocol-triton-dev-key", key);
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      `/inference.GRPCInferenceService/${method}`,
      (b: Buffer) => b,
      (b: Buffer) => b,
      request,
      md,
      { deadline: Date.now() + 10_000 },
      (err) => {
        client.close();
        resolve(err ? err.code : grpc.status.OK);
      },
    );
  });
}

const MODEL_CONFIG = `name: "add_one"
backend: "python"
max_batch_size: 8
input [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ 4 ] } ]
instance_group [ { kind: KIND_CPU count: 1 } ]
`;
const MODEL_PY = `import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for r in requests:
            x = pb_utils.get_input_tensor_by_name(r, "X").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("Y", (x + 1).astype(np.float32))]))
        return out
`;

/** SystemSharedMemoryRegisterRequest: name = 1, key = 2, offset = 3, byte_size = 4. */
function shmRegisterRequest(name: string, key: string, byteSize: number): Buffer {
  const w = new BinaryWriter();
  w.tag(1, WireType.LengthDelimited).string(name);
  w.tag(2, WireType.LengthDelimited).string(key);
  w.tag(3, WireType.Varint).uint64(0);
  w.tag(4, WireType.Varint).uint64(byteSize);
  return Buffer.from(w.finish());
}

/** The python backend's regions a process maps (its model instances' shared memory with their stubs). */
async function pythonRegions(pid: number): Promise<string[]> {
  const maps = await fs.readFile(`/proc/${pid}/maps`, "utf8");
  return [...new Set([...maps.matchAll(/\/dev\/shm\/(triton_python_backend_shm_region_\S+)/g)].map((m) => m[1]!))];
}

describe.skipIf(!asRoot)("the repository key, seen from another local user (real Triton)", () => {
  let env: NodeJS.ProcessEnv;
  let ports: { http: number; grpc: number; metrics: number };
  let key: string;
  let pid: number;
  let stateDir: string;

  beforeAll(async () => {
    const models = await tempDir("key-models");
    await fs.mkdir(path.join(models, "add_one", "1"), { recursive: true });
    await fs.writeFile(path.join(models, "add_one", "config.pbtxt"), MODEL_CONFIG);
    await fs.writeFile(path.join(models, "add_one", "1", "model.py"), MODEL_PY);
    env = await testEnv();
    stateDir = env.TRITON_DEV_STATE_DIR!;
    // As a user's own ~/.cache would be: other users may look in, and into the models folder.
    for (const d of [stateDir, models, path.join(models, "add_one"), path.join(models, "add_one", "1")])
      await fs.chmod(d, 0o755);
    ports = await freePorts();
    const up = await runCli(["up", "--detach", "--reload", "explicit", "--models", models, ...portArgs(ports)], env);
    expect(up.stderr).toBe("");
    expect(up.code).toBe(0);
    const record = JSON.parse(await fs.readFile(path.join(stateDir, "run.json"), "utf8"));
    key = record.repositoryKey.value;
    pid = record.pid;
    expect(key).toMatch(/^[0-9a-f]{48}$/);
  }, 300_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
  }, 60_000);

  it("is on no process's command line, in no file they can read, and their environment is closed to them", async () => {
    const ps = await run("setpriv", [...NOBODY, "ps", "-eo", "pid,args", "--width", "100000"]);
    expect(ps.code).toBe(0);
    expect(ps.out).toContain("--http-restricted-api=model-repository,shared-memory,logging,trace:triton-dev-key=");
    expect(ps.out).not.toContain(key);
    const seen = await asNobody(
      `
      import fs from "node:fs";
      import path from "node:path";
      let text = "";
      for (const p of fs.readdirSync("/proc").filter((d) => /^\\d+$/.test(d))) {
        try { text += fs.readFileSync("/proc/" + p + "/cmdline", "latin1"); } catch {}
      }
      const walk = (d) => { for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        const f = path.join(d, e.name);
        try { if (e.isDirectory()) walk(f); else if (e.isFile()) text += fs.readFileSync(f, "latin1"); } catch {}
      } };
      walk(${JSON.stringify(stateDir)});
      let environ = "closed";
      try { fs.readFileSync("/proc/${pid}/environ"); environ = "open"; } catch {}
      process.stdout.write(JSON.stringify({ hasKey: text.includes(process.env.LOOK_FOR), length: text.length, environ }));
    `,
      key,
    );
    expect(seen.code, seen.out).toBe(0);
    const r = JSON.parse(seen.out) as { hasKey: boolean; length: number; environ: string };
    // The log file is readable: something was looked at, and none of it held the key.
    expect(r.length).toBeGreaterThan(1000);
    expect(r.hasKey).toBe(false);
    expect(r.environ).toBe("closed");
  });

  it("closes the repository API to them over HTTP, also with the placeholder they can see", async () => {
    const tried = await asNobody(`
      const base = "http://127.0.0.1:${ports.http}";
      const codes = [];
      for (const headers of [{}, { "triton-dev-key": "triton-dev-key-file" }, { "triton-dev-key": "" }]) {
        const r = await fetch(base + "/v2/repository/models/add_one/unload", { method: "POST", headers });
        codes.push(r.status);
      }
      const infer = await fetch(base + "/v2/models/add_one/infer", { method: "POST",
        body: JSON.stringify({ inputs: [{ name: "X", datatype: "FP32", shape: [1, 4], data: [1, 2, 3, 4] }] }) });
      process.stdout.write(JSON.stringify({ codes, infer: infer.status }));
    `);
    expect(tried.code, tried.out).toBe(0);
    const r = JSON.parse(tried.out) as { codes: number[]; infer: number };
    expect(r.codes).toEqual([403, 403, 403]);
    // Inference stays open to local users, as with any local server (the README says so).
    expect(r.infer).toBe(200);
    const ready = await fetch(`http://127.0.0.1:${ports.http}/v2/models/add_one/ready`);
    expect(ready.status).toBe(200);
  });

  it("takes the key (HTTP and gRPC), and a model loaded through the API by a key holder is shown as not ours", async () => {
    const address = `127.0.0.1:${ports.grpc}`;
    expect(await grpcRepositoryIndex(address, key)).toBe(grpc.status.OK);
    expect(await grpcRepositoryIndex(address)).not.toBe(grpc.status.OK);
    expect(await grpcRepositoryIndex(address, "triton-dev-key-file")).not.toBe(grpc.status.OK);
    const b64 = (s: string) => Buffer.from(s).toString("base64");
    const load = await fetch(`http://127.0.0.1:${ports.http}/v2/repository/models/intruder/load`, {
      method: "POST",
      headers: { "triton-dev-key": key, "content-type": "application/json" },
      body: JSON.stringify({
        parameters: {
          config: JSON.stringify({
            name: "intruder",
            backend: "python",
            max_batch_size: 8,
            input: [{ name: "X", data_type: "TYPE_FP32", dims: [4] }],
            output: [{ name: "Y", data_type: "TYPE_FP32", dims: [4] }],
            instance_group: [{ kind: "KIND_CPU", count: 1 }],
          }),
          "file:1/model.py": b64(MODEL_PY),
        },
      }),
    });
    expect(load.status, await load.text()).toBe(200);
    const json = JSON.parse((await runCli(["status", "--json"], env)).stdout);
    expect(json.foreignModels).toEqual(["intruder"]);
    expect(json.models.find((m: { name: string }) => m.name === "intruder")).toMatchObject({ foreign: true });
    expect(json.models.find((m: { name: string }) => m.name === "add_one").foreign).toBeUndefined();
    const text = await runCli(["status"], env);
    expect(text.stderr).toMatch(/Triton serves intruder, which triton-dev did not load/);
    expect(text.stdout).toMatch(/intruder\s+1\s+READY\s+not loaded by triton-dev/);
  }, 120_000);
  it("keeps the python backend's regions to the server's user: another user cannot read a request's tensors", async () => {
    expect(await fs.readFile(`/proc/${pid}/status`, "utf8")).toMatch(/^Umask:\s+0077$/m);
    const regions = await pythonRegions(pid);
    expect(regions.length).toBeGreaterThan(0);
    for (const r of regions) expect((await fs.stat(path.join("/dev/shm", r))).mode & 0o777).toBe(0o600);
    const tried = await asNobody(
      `
      import fs from "node:fs";
      const codes = JSON.parse(process.env.LOOK_FOR).map((r) => {
        try { fs.readFileSync("/dev/shm/" + r); return "read"; } catch (e) { return e.code; }
      });
      process.stdout.write(JSON.stringify(codes));
    `,
      JSON.stringify(regions),
    );
    expect(tried.code, tried.out).toBe(0);
    expect(JSON.parse(tried.out)).toEqual(regions.map(() => "EACCES"));
  });

  it("refuses another user's shared memory registration, so no inference writes into the server's own regions", async () => {
    // The crash the hostile pass found: register the python backend's region, point an
    // inference's output at it, and the next inference kills tritonserver (signal 11).
    const [region] = await pythonRegions(pid);
    const tried = await asNobody(
      `
      const base = "http://127.0.0.1:${ports.http}";
      const json = { "content-type": "application/json" };
      const status = async (p, init) => (await fetch(base + p, init)).status;
      const r = {};
      r.register = await status("/v2/systemsharedmemory/region/victim/register", { method: "POST", headers: json,
        body: JSON.stringify({ key: "/" + process.env.LOOK_FOR, offset: 0, byte_size: 1024 }) });
      r.status = await status("/v2/systemsharedmemory/status");
      r.cuda = await status("/v2/cudasharedmemory/status");
      r.intoRegion = await status("/v2/models/add_one/infer", { method: "POST", headers: json, body: JSON.stringify({
        inputs: [{ name: "X", datatype: "FP32", shape: [1, 4], data: [1, 2, 3, 4] }],
        outputs: [{ name: "Y", parameters: { shared_memory_region: "victim", shared_memory_byte_size: 16 } }] }) });
      r.after = [];
      for (let i = 0; i < 2; i++)
        r.after.push(await status("/v2/models/add_one/infer", { method: "POST", headers: json, body: JSON.stringify({
          inputs: [{ name: "X", datatype: "FP32", shape: [1, 4], data: [1, 2, 3, 4] }] }) }));
      process.stdout.write(JSON.stringify(r));
    `,
      region,
    );
    expect(tried.code, tried.out).toBe(0);
    const r = JSON.parse(tried.out) as Record<string, unknown>;
    expect(r).toMatchObject({ register: 403, status: 403, cuda: 403, after: [200, 200] });
    expect(r.intoRegion).toBeGreaterThanOrEqual(400);
    expect((await fetch(`http://127.0.0.1:${ports.http}/v2/health/live`)).status).toBe(200);

    const address = `127.0.0.1:${ports.grpc}`;
    const register = shmRegisterRequest("victim", `/${region}`, 1024);
    expect(await grpcCall(address, "SystemSharedMemoryRegister", undefined, register)).not.toBe(grpc.status.OK);
    expect(await grpcCall(address, "SystemSharedMemoryRegister", "triton-dev-key-file", register)).not.toBe(
      grpc.status.OK,
    );
    for (const method of ["SystemSharedMemoryStatus", "CudaSharedMemoryStatus"])
      expect(await grpcCall(address, method)).not.toBe(grpc.status.OK);
    // The key holder is let through (perf registers its regions this way).
    expect(await grpcCall(address, "SystemSharedMemoryStatus", key)).toBe(grpc.status.OK);
    const held = await fetch(`http://127.0.0.1:${ports.http}/v2/systemsharedmemory/status`, {
      headers: { "triton-dev-key": key },
    });
    expect(held.status).toBe(200);
    expect(await held.json()).toEqual([]);
  });

  it("closes the logging and trace APIs to everyone without the key, and leaves statistics and config open", async () => {
    const tried = await asNobody(`
      const base = "http://127.0.0.1:${ports.http}";
      const json = { "content-type": "application/json" };
      const status = async (p, init) => (await fetch(base + p, init)).status;
      process.stdout.write(JSON.stringify({
        logging: [await status("/v2/logging"),
          await status("/v2/logging", { method: "POST", headers: json, body: JSON.stringify({ log_verbose_level: 1 }) })],
        trace: [await status("/v2/trace/setting"), await status("/v2/models/add_one/trace/setting"),
          await status("/v2/trace/setting", { method: "POST", headers: json, body: JSON.stringify({ trace_rate: "1" }) })],
        open: [await status("/v2/models/stats"), await status("/v2/models/add_one/config"), await status("/v2/models/add_one")],
      }));
    `);
    expect(tried.code, tried.out).toBe(0);
    expect(JSON.parse(tried.out)).toEqual({ logging: [403, 403], trace: [403, 403, 403], open: [200, 200, 200] });
    const address = `127.0.0.1:${ports.grpc}`;
    for (const method of ["LogSettings", "TraceSetting"]) {
      expect(await grpcCall(address, method)).not.toBe(grpc.status.OK);
      expect(await grpcCall(address, method, key)).toBe(grpc.status.OK);
    }
    for (const p of ["/v2/logging", "/v2/trace/setting"])
      expect((await fetch(`http://127.0.0.1:${ports.http}${p}`, { headers: { "triton-dev-key": key } })).status).toBe(
        200,
      );
  });
});
