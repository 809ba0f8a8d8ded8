import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePorts, portArgs, runCli, SAMPLE_MODELS, tempDir, testEnv } from "../helpers/cli.js";
import { seededRandom } from "../../src/perf/inputs.js";
import type { PerfReport } from "../../src/perf/run.js";
import { SHM_PREFIX, SystemShmSession } from "../../src/perf/shared-memory.js";
import { GrpcTransport, HttpTransport, type InferTransport } from "../../src/perf/transport.js";
import { encodeTensorData, type DecodedInferResponse, type RawTensor } from "../../src/triton/binary.js";
import { closingFetch } from "../../src/triton/http-client.js";
import { HttpSystemShm, SharedMemoryRestrictedError } from "../../src/triton/system-shm.js";
import { runPerfCli, spawnPerfCli } from "./helpers.js";

/**
 * `perf --shared-memory system` on the real tritonserver (local runtime): the server computes the
 * same outputs from the regions as from request bodies, perf measures through them, and nothing
 * is left in /dev/shm or in Triton's registrations afterwards, also after Ctrl-C.
 */
describe("perf --shared-memory system (real Triton)", () => {
  let env: NodeJS.ProcessEnv;
  let ports: { http: number; grpc: number; metrics: number };
  let api: HttpSystemShm;

  const ours = async (pid?: number) =>
    (await fs.readdir("/dev/shm")).filter((n) => n.startsWith(pid ? `${SHM_PREFIX}${pid}_` : SHM_PREFIX));

  beforeAll(async () => {
    env = await testEnv();
    ports = await freePorts();
    const models = await tempDir("shm-models");
    for (const m of ["image_classifier", "bert_tokenizer"])
      await fs.cp(path.join(SAMPLE_MODELS, m), path.join(models, m), {
        recursive: true,
        filter: (src) => !src.includes("__pycache__"),
      });
    const up = await runCli(["up", "--detach", "--models", models, ...portArgs(ports)], env);
    expect(up.stdout).toMatch(/2 of 2 models READY/);
    // The API is restricted to the run's key, which the record holds (perf reads it there too).
    const record = JSON.parse(await fs.readFile(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"), "utf8"));
    api = new HttpSystemShm(`http://127.0.0.1:${ports.http}`, closingFetch, record.repositoryKey);
  }, 300_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
  }, 60_000);

  const image = (): RawTensor[] => {
    const random = seededRandom(7);
    const f = new Float32Array(3 * 224 * 224);
    for (let i = 0; i < f.length; i++) f[i] = random();
    return [{ name: "input_1", datatype: "FP32", shape: [1, 3, 224, 224], data: Buffer.from(f.buffer) }];
  };
  const text = (): RawTensor[] => [
    { name: "TEXT_INPUT", datatype: "BYTES", shape: [1, 1], data: encodeTensorData("BYTES", ["a great movie"]) },
  ];

  async function once(make: () => InferTransport): Promise<DecodedInferResponse> {
    const t = make();
    try {
      return await t.probe(0);
    } finally {
      t.close();
    }
  }

  it("computes the same outputs from the regions as from request bodies (FP32 over HTTP, BYTES over gRPC)", async () => {
    for (const [model, payload, protocol] of [
      ["image_classifier", image(), "http"],
      ["bert_tokenizer", text(), "grpc"],
    ] as const) {
      const make = (sharedMemory?: SystemShmSession) => () => {
        const o = {
          model,
          payloads: [payload],
          maxConnections: 1,
          ...(sharedMemory ? { sharedMemory: sharedMemory.refs } : {}),
        };
        return protocol === "grpc"
          ? new GrpcTransport(`127.0.0.1:${ports.grpc}`, o)
          : new HttpTransport("127.0.0.1", ports.http, o);
      };
      const body = await once(make());
      const session = await SystemShmSession.create(api, [payload]);
      try {
        const region = session.regions[0]!;
        expect((await api.status()).map((s) => s.name)).toEqual([region.name]);
        const viaShm = await once(make(session));
        expect(viaShm.outputs.length).toBeGreaterThan(0);
        expect(viaShm.outputs).toEqual(body.outputs);
        // The server reads the region itself: other bytes in it give other outputs.
        const file = path.join("/dev/shm", region.file);
        const bytes = await fs.readFile(file);
        if (payload[0]!.datatype === "BYTES") bytes.write("z", region.inputs[0]!.offset + 4);
        else bytes.fill(0, region.inputs[0]!.offset, region.inputs[0]!.offset + region.inputs[0]!.byteSize);
        await fs.writeFile(file, bytes);
        expect((await once(make(session))).outputs).not.toEqual(body.outputs);
      } finally {
        await session.close();
      }
      expect(await api.status()).toEqual([]);
      expect(await ours(process.pid)).toEqual([]);
    }
  }, 120_000);

  it("measures through the regions, lists them at Triton meanwhile, says so in its report, and leaves nothing", async () => {
    const work = await tempDir("shm-perf");
    const csv = path.join(work, "out.csv");
    const run = spawnPerfCli(
      [
        "image_classifier",
        "--shared-memory",
        "system",
        "--concurrency-range",
        "1,2",
        "-p",
        "1000",
        "-r",
        "3",
        "-f",
        csv,
      ],
      env,
    );
    await run.waitFor(/window 1:/, 90_000);
    const during = await api.status();
    const pid = run.child.pid!;
    expect(during.length).toBeGreaterThan(0);
    expect(during.every((s) => s.key.startsWith(`/${SHM_PREFIX}${pid}_`))).toBe(true);
    expect((await ours(pid)).sort()).toEqual(during.map((s) => s.key.slice(1)).sort());
    expect(await run.exit).toBe(0);
    expect(run.stdout()).toMatch(/inputs in system shared memory \(outputs in the response body\)/);
    const rows = (await fs.readFile(csv, "utf8")).trim().split("\n");
    expect(rows[0]!.split(",").at(-1)).toBe("Shared Memory");
    expect(rows.slice(1).map((r) => r.split(",").at(-1))).toEqual(["system", "system"]);
    expect(rows.slice(1).every((r) => Number(r.split(",")[1]) > 0)).toBe(true);
    expect(await api.status()).toEqual([]);
    expect(await ours(pid)).toEqual([]);

    const j = spawnPerfCli(
      [
        "bert_tokenizer",
        "-i",
        "grpc",
        "--shared-memory",
        "system",
        "--concurrency-range",
        "2",
        "-p",
        "1000",
        "-r",
        "3",
        "--json",
      ],
      env,
    );
    // Its output whole: "close" comes after the pipes' last data, "exit" may not.
    const closed = new Promise((r) => j.child.once("close", r));
    expect(await j.exit, j.stderr()).toBe(0);
    await closed;
    const s = (JSON.parse(j.stdout()) as PerfReport).sweeps[0]!;
    expect(s.sharedMemory).toBe("system");
    expect(s.levels[0]!.throughput).toBeGreaterThan(0);
    expect(s.levels[0]!.errorCount).toBe(0);
    expect(await api.status()).toEqual([]);
    // This run's regions (named by its pid): another perf on the machine may hold its own meanwhile.
    expect(await ours(j.child.pid!)).toEqual([]);
  }, 240_000);

  // Inference is open to every local user and names a region only by its name: another user who
  // lists /dev/shm must not be able to derive it and read perf's inputs or write into its region.
  it.skipIf(process.getuid?.() !== 0)(
    "keeps its region names at Triton random and apart from its /dev/shm files, so another local user cannot name them",
    async () => {
      const run = spawnPerfCli(
        [
          "image_classifier",
          "--shared-memory",
          "system",
          "--concurrency-range",
          "1",
          "-p",
          "3000",
          "-r",
          "3",
          "--no-history",
        ],
        env,
      );
      try {
        await run.waitFor(/window 1:/, 90_000);
        const pid = run.child.pid!;
        const files = await ours(pid);
        const registered = await api.status();
        // uid 65534 lists /dev/shm and names each of perf's files as a region, as input and as output.
        const tried = await new Promise<{ code: number; out: string }>((resolve) =>
          execFile(
            "setpriv",
            [
              "--reuid=65534",
              "--regid=65534",
              "--clear-groups",
              process.execPath,
              "--input-type=module",
              "-e",
              `
              import fs from "node:fs";
              const base = "http://127.0.0.1:" + process.env.PORT + "/v2/models/image_classifier/infer";
              const names = fs.readdirSync("/dev/shm").filter((n) => n.startsWith(process.env.PREFIX));
              const shape = [1, 3, 224, 224];
              const tries = [];
              for (const name of names) {
                const region = { shared_memory_region: name, shared_memory_byte_size: 3 * 224 * 224 * 4 };
                const asInput = { inputs: [{ name: "input_1", datatype: "FP32", shape, parameters: region }] };
                const asOutput = {
                  inputs: [{ name: "input_1", datatype: "FP32", shape, data: new Array(3 * 224 * 224).fill(0) }],
                  outputs: [{ name: "predictions", parameters: { ...region, shared_memory_byte_size: 4000 } }],
                };
                for (const body of [asInput, asOutput]) {
                  const r = await fetch(base, { method: "POST", body: JSON.stringify(body) });
                  tries.push({ status: r.status, text: (await r.text()).slice(0, 300) });
                }
              }
              process.stdout.write(JSON.stringify({ names, tries }));
              `,
            ],
            {
              env: { PATH: process.env.PATH, PORT: String(ports.http), PREFIX: `${SHM_PREFIX}${pid}_` },
              timeout: 60_000,
              maxBuffer: 16 * 1024 * 1024,
            },
            (err, stdout, stderr) =>
              resolve({
                code: err ? Number((err as { code?: unknown }).code ?? 1) || 1 : 0,
                out: `${stdout}${stderr}`,
              }),
          ),
        );
        expect(tried.code, tried.out).toBe(0);
        const r = JSON.parse(tried.out) as { names: string[]; tries: { status: number; text: string }[] };
        expect(r.names.sort()).toEqual(files.sort());
        expect(r.tries).toHaveLength(2 * files.length);
        for (const t of r.tries) {
          expect(t.status, t.text).toBe(404);
          expect(t.text).toMatch(/Unable to find shared memory region/);
        }
        // The names Triton holds (read with the key) are random, none of them a file's name.
        expect(files.length).toBeGreaterThan(0);
        expect(registered.map((r) => r.key).sort()).toEqual(files.map((f) => `/${f}`).sort());
        for (const r of registered) {
          expect(r.name).toMatch(/^[0-9a-f]{32}$/);
          for (const f of files) expect(r.name).not.toContain(f);
        }
      } finally {
        // Its windows are long enough for the look above; it need not finish them.
        run.child.kill("SIGINT");
        await run.exit;
      }
      expect(await api.status()).toEqual([]);
    },
    180_000,
  );

  it("unregisters and unlinks its regions when interrupted mid-run", async () => {
    const run = spawnPerfCli(
      [
        "image_classifier",
        "--shared-memory",
        "system",
        "--concurrency-range",
        "2",
        "-p",
        "1000",
        "-r",
        "50",
        "--no-history",
      ],
      env,
    );
    await run.waitFor(/window 1:/, 90_000);
    const pid = run.child.pid!;
    expect((await api.status()).length).toBeGreaterThan(0);
    expect((await ours(pid)).length).toBeGreaterThan(0);
    run.child.kill("SIGINT");
    expect(await run.exit).toBe(130);
    expect(await api.status()).toEqual([]);
    expect(await ours(pid)).toEqual([]);
  }, 180_000);

  it("cleans up after a perf that was killed outright (SIGKILL) when the next one starts", async () => {
    const run = spawnPerfCli(
      [
        "image_classifier",
        "--shared-memory",
        "system",
        "--concurrency-range",
        "2",
        "-p",
        "1000",
        "-r",
        "50",
        "--no-history",
      ],
      env,
    );
    await run.waitFor(/window 1:/, 90_000);
    const pid = run.child.pid!;
    run.child.kill("SIGKILL");
    await run.exit;
    expect((await api.status()).length).toBeGreaterThan(0);
    expect((await ours(pid)).length).toBeGreaterThan(0);
    const next = await runPerfCli(
      [
        "bert_tokenizer",
        "--shared-memory",
        "system",
        "--concurrency-range",
        "1",
        "-p",
        "500",
        "-r",
        "3",
        "--no-history",
      ],
      env,
    );
    expect(next.code, next.stderr).toBe(0);
    expect(next.stderr).toMatch(/removed \d+ shared memory region\(s\) left by perf runs that died/);
    expect(await api.status()).toEqual([]);
    expect(await ours(pid)).toEqual([]);
  }, 180_000);

  it("is refused without the run's key: with -u, perf holds none, and perf_analyzer would need it on its command line", async () => {
    const without = new HttpSystemShm(`http://127.0.0.1:${ports.http}`);
    await expect(without.status()).rejects.toBeInstanceOf(SharedMemoryRestrictedError);
    const r = await runPerfCli(
      ["image_classifier", "-u", `127.0.0.1:${ports.http}`, "--shared-memory", "system", "-p", "500", "--no-history"],
      env,
      60_000,
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/Triton refused to register the input shared memory: its API needs a key/);
    expect(r.stderr).toMatch(/hint: .*leave out -u/);
    // perf_analyzer could take the key only on its command line, which every local user reads.
    const pa = await runPerfCli(
      ["image_classifier", "--engine", "perf_analyzer", "--shared-memory", "system", "--no-history"],
      env,
      60_000,
    );
    expect(pa.code).toBe(2);
    expect(pa.stderr).toMatch(
      /--engine perf_analyzer cannot use --shared-memory system on the server `triton-dev up` started/,
    );
    expect(pa.stderr).toMatch(/hint: .*command line/);
    expect(await api.status()).toEqual([]);
    expect(await ours()).toEqual([]);
  }, 90_000);

  it("refuses a server that is not on this machine before sending anything", async () => {
    const r = await runPerfCli(["image_classifier", "-u", "192.0.2.1:8000", "--shared-memory", "system"], env, 30_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/192\.0\.2\.1/);
    expect(r.stderr).toMatch(/hint: .*-u 127\.0\.0\.1:PORT/);
    expect(await ours()).toEqual([]);
  }, 60_000);
});
