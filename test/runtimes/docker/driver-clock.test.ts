import net from "node:net";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { resolvePaths } from "../../../src/config/paths.js";
import { UserError } from "../../../src/errors.js";
import { FakeClock } from "../../../src/fake-clock.js";
import { DockerUnavailableError } from "../../../src/runtimes/clients/container/client.js";
import { createDockerDriver } from "../../../src/runtimes/docker/driver.js";
import type { RunState } from "../../../src/state/run-state.js";
import { tempDir } from "../../helpers/cli.js";

/** A Docker socket that takes connections and never answers: a daemon that hangs, with no Docker here. */
async function silentDaemon(): Promise<{ host: string; close: () => Promise<void> }> {
  const socket = path.join(await tempDir("silent-daemon"), "docker.sock");
  const held: net.Socket[] = [];
  const server = net.createServer((c) => void held.push(c));
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  return {
    host: `unix://${socket}`,
    close: async () => {
      for (const c of held) c.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

/** Whether `p` has settled yet. */
function track(p: Promise<unknown>): { settled: boolean } {
  const t = { settled: false };
  p.then(
    () => (t.settled = true),
    () => (t.settled = true),
  );
  return t;
}

describe("the docker driver's waits run on the context's clock", () => {
  it("gives up on a daemon that does not answer the leftover search once 1.5 s pass on that clock", async () => {
    const daemon = await silentDaemon();
    closing.push(daemon.close);
    const clock = new FakeClock();
    const paths = resolvePaths({ TRITON_DEV_HOME: await tempDir("driver-clock") });
    const leftovers = createDockerDriver().cleanup(0, { paths, env: { DOCKER_HOST: daemon.host }, clock });
    const search = track(leftovers);
    // On the real clock the search would give up by itself 1.5 s later.
    await Promise.race([clock.waiting(), leftovers]);
    expect(search.settled).toBe(false);
    await clock.advance(1_499);
    expect(search.settled).toBe(false);
    await clock.advance(1);
    expect(await leftovers).toEqual({ json: { orphanContainers: [] }, lines: [] });
    expect(clock.pending).toBe(0);
  });

  it("refuses to stop a recorded container whose daemon does not answer, once 5 s pass on that clock", async () => {
    const daemon = await silentDaemon();
    closing.push(daemon.close);
    const clock = new FakeClock();
    const dir = await tempDir("driver-clock");
    const paths = resolvePaths({ TRITON_DEV_HOME: dir, TRITON_DEV_STATE_DIR: dir });
    const state: RunState = {
      version: 1,
      runId: "r1",
      runtime: "docker",
      pid: 1,
      executable: "tritonserver",
      detached: true,
      startedAt: "2026-01-02T03:04:05.000Z",
      modelsDir: "/m",
      runDir: path.join(dir, "runs", "r1"),
      repository: path.join(dir, "runs", "r1", "repository"),
      logFile: path.join(dir, "runs", "r1", "log"),
      host: "127.0.0.1",
      ports: { http: 1, grpc: 2, metrics: 3 },
      reload: "poll",
      pollSecs: 1,
      repositoryKey: { header: "triton-dev-key", value: "secret" },
      runtimeRecord: {
        containerId: "0123456789ab",
        containerName: "triton-dev-m",
        image: "img",
        daemon: daemon.host,
        gpus: "none",
        shmBytes: 1024 ** 3,
      },
    };
    const run = createDockerDriver().attach(state, { paths, env: {}, clock });
    const stopping = run.stop(15_000).catch((err: unknown) => err);
    const stop = track(stopping);
    await Promise.race([clock.waiting(), stopping]);
    expect(stop.settled).toBe(false);
    await clock.advance(5_000);
    const err = await stopping;
    // Refused for the daemon, and for its silence (the deadline), not a refused connection.
    expect(err).toBeInstanceOf(UserError);
    const unavailable = (err as UserError).cause;
    expect(unavailable).toBeInstanceOf(DockerUnavailableError);
    expect(((unavailable as DockerUnavailableError).cause as NodeJS.ErrnoException).code).toBe("ETIMEDOUT");
    expect(clock.pending).toBe(0);
  });
});
