import fs from "node:fs/promises";
import { afterAll, describe, expect, it } from "vitest";
import { resolvePaths } from "../../src/config/paths.js";
import { UserError } from "../../src/errors.js";
import { readRunState, removeRunState, writeRunState, type RunState } from "../../src/state/run-state.js";
import { currentRun } from "../../src/session/current-run.js";
import { createKindDriver } from "../../src/runtimes/kind/driver.js";
import { KubectlTools } from "../../src/runtimes/clients/kubectl/tools.js";
import { isOurProcess } from "../../src/state/process.js";
import { removeTempDirs, tempDir } from "../helpers/cli.js";

afterAll(removeTempDirs);

const sample = (pid: number, executable = process.execPath): RunState => ({
  version: 1,
  runId: "r1",
  runtime: "local",
  pid,
  executable,
  detached: true,
  startedAt: "2026-01-02T03:04:05.000Z",
  modelsDir: "/m",
  runDir: "/r",
  repository: "/r/repository",
  logFile: "/r/log",
  host: "127.0.0.1",
  ports: { http: 1, grpc: 2, metrics: 3 },
  reload: "poll",
  pollSecs: 1,
  repositoryKey: { header: "triton-dev-key", value: "secret" },
});

describe("run state", () => {
  it("round-trips atomically with private permissions", async () => {
    const paths = resolvePaths({ TRITON_DEV_STATE_DIR: await tempDir("rs"), TRITON_DEV_HOME: "/unused" });
    await writeRunState(paths, sample(process.pid));
    expect(await readRunState(paths)).toEqual(sample(process.pid));
    expect((await fs.stat(paths.runFile)).mode & 0o777).toBe(0o600);
    const leftovers = (await fs.readdir(paths.stateDir)).filter((f) => f.endsWith(".tmp"));
    expect(leftovers).toEqual([]);
  });

  it("keeps the kind runtime's cluster record, and a kind run whose cluster is unreachable is not alive", async () => {
    const paths = resolvePaths({ TRITON_DEV_STATE_DIR: await tempDir("rs"), TRITON_DEV_HOME: "/unused" });
    const kind: RunState = {
      ...sample(process.pid, "kubectl"),
      runtime: "kind",
      runtimeRecord: {
        cluster: "triton-dev",
        context: "kind-triton-dev",
        namespace: "triton-dev",
        created: true,
        keepCluster: false,
        nodeContainer: "triton-dev-worker",
        image: "img",
        gpus: 0,
        kinds: ["deployments", "services", "secrets"],
        daemon: "unix:///var/run/docker.sock",
      },
    };
    await writeRunState(paths, kind);
    expect(await readRunState(paths)).toEqual(kind);
    // Its liveness is the Deployment in the cluster, asked through kubectl; no such context here.
    const driver = createKindDriver({ tools: () => new KubectlTools(undefined, { PATH: "/nonexistent" }) });
    const run = driver.attach((await readRunState(paths))!, { paths, env: {} });
    expect(await run.alive()).toBe(false);
    expect(run.describe().where).toBe("kind cluster triton-dev");
  });

  it("refuses a runtime record its driver does not understand, naming the field", async () => {
    const paths = resolvePaths({ TRITON_DEV_STATE_DIR: await tempDir("rs"), TRITON_DEV_HOME: "/unused" });
    const broken: RunState = { ...sample(process.pid, "kubectl"), runtime: "kind", runtimeRecord: { cluster: 3 } };
    await writeRunState(paths, broken);
    const err = await currentRun(paths, {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    expect((err as Error).message).toMatch(/runtimeRecord\.cluster/);
  });

  it("tells a live run from a stale one (process gone, or pid reused by another program)", async () => {
    const paths = resolvePaths({ TRITON_DEV_STATE_DIR: await tempDir("rs"), TRITON_DEV_HOME: "/unused" });
    await writeRunState(paths, sample(process.pid));
    expect((await currentRun(paths))?.alive).toBe(true);
    await writeRunState(paths, sample(process.pid, "/opt/tritonserver/bin/tritonserver"));
    expect((await currentRun(paths))?.alive).toBe(false);
    await writeRunState(paths, sample(2 ** 22 + 12345));
    expect((await currentRun(paths))?.alive).toBe(false);
    await removeRunState(paths);
    expect(await currentRun(paths)).toBeUndefined();
  });

  it("rejects a corrupt or foreign record with a hint to remove it", async () => {
    const paths = resolvePaths({ TRITON_DEV_STATE_DIR: await tempDir("rs"), TRITON_DEV_HOME: "/unused" });
    await fs.mkdir(paths.stateDir, { recursive: true });
    await fs.writeFile(paths.runFile, "{not json");
    await expect(readRunState(paths)).rejects.toBeInstanceOf(UserError);
    await fs.writeFile(paths.runFile, JSON.stringify({ version: 1, runId: 3 }));
    const err = await readRunState(paths).catch((e) => e);
    expect(err).toBeInstanceOf(UserError);
    expect(err.message).toMatch(/field runId/);
  });

  it("recognises our own process by executable", () => {
    expect(isOurProcess(process.pid, process.execPath)).toBe(true);
    expect(isOurProcess(process.pid, "/usr/bin/something-else")).toBe(false);
  });
});
