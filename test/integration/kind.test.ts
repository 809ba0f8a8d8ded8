import { execFile, spawn } from "node:child_process";
import fsp from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isPortFree } from "../../src/net/ports.js";
import { findProcesses } from "../../src/state/process.js";
import { copySampleModels, freePorts, portArgs, runCli, tempDir, testEnv, jsonEvents } from "../helpers/cli.js";
import { untilOffsetServes, writeOffsetModel } from "../helpers/offset-model.js";
import {
  buildTestImage,
  dieTime,
  dockerAvailability,
  eventTime,
  LocalRegistry,
  removeImage,
  removeTestImages,
} from "../fixtures/docker/harness.js";
import { endedBeforeExitTimeout } from "../helpers/exit-wait.js";

/**
 * `up --runtime kind` where a real cluster would have to come in several or misbehave, and the
 * test reads the pod's container from the Docker daemon: a kept cluster and a crashed run's
 * leftovers, a Triton that keeps exiting. Everything else (create, load, apply, port-forward,
 * status, hot reload, down, a foreign cluster refused, kind missing, GPUs without the NVIDIA
 * runtime) runs with the real kind in kind-real.test.ts. Here test/fixtures/kind/bin's
 * `kind` and `kubectl`, first on PATH, emulate one on the real Docker daemon: node containers
 * with the config's mounts, the Deployment's pod as a real container of the test image (the
 * NGC-layout stand-in, pulled from a registry on 127.0.0.1 as the docker tests do), a real TCP
 * port-forward, the container's log. Everything triton-dev does runs for real against it.
 */
const availability = await dockerAvailability();
const skipReason = availability.ok ? "" : ` (skipped: ${availability.reason})`;
if (!availability.ok) console.warn(`kind integration tests skipped: ${availability.reason}`);

const here = path.dirname(fileURLToPath(import.meta.url));
const FAKE_BIN = path.resolve(here, "../fixtures/kind/bin");
const CLUSTER_LABEL = "io.x-k8s.kind.cluster";

const events = jsonEvents;

/** The emulator's kubectl processes for a cluster: every one, or the long-running port-forward and log follower. */
function kubectls(cluster: string, longRunning = false): number[] {
  return findProcesses(
    (argv) =>
      argv.some((a) => a === path.join(FAKE_BIN, "kubectl")) &&
      argv.includes(`--context=kind-${cluster}`) &&
      (!longRunning || argv.includes("port-forward") || argv.includes("logs")),
  );
}

async function clusterContainers(docker: Docker, cluster: string): Promise<Docker.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${CLUSTER_LABEL}=${cluster}`] }) });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!availability.ok)(
  `up --runtime kind against an emulated kind cluster on a real Docker daemon${skipReason}`,
  () => {
    const docker = (availability as { docker: Docker }).docker;
    const registry = new LocalRegistry();
    const suffix = Math.random().toString(36).slice(2, 7);
    const cluster = `tdk-${suffix}`;
    let image = "";
    let env: NodeJS.ProcessEnv;
    let ports: { http: number; grpc: number; metrics: number };
    let models: string;
    beforeAll(async () => {
      const built = await buildTestImage();
      await registry.start(built.registryDir);
      image = registry.ref(built);
      // Absent from the daemon, so `up` pulls it (with progress) before `kind load`.
      await removeTestImages(docker, built);
      const emulator = await tempDir("kind-emulator");
      env = await testEnv({
        PATH: `${FAKE_BIN}:${process.env.PATH}`,
        KIND_EMULATOR_STATE: emulator,
        KIND_EMULATOR_NODE_IMAGE: image,
      });
      ports = await freePorts();
      models = await copySampleModels();
    }, 900_000);

    afterAll(async () => {
      if (env) await runCli(["down"], env);
      for (const name of [cluster, `${cluster}-kept`, `${cluster}-crash`]) {
        for (const c of await clusterContainers(docker, name).catch(() => []))
          await docker
            .getContainer(c.Id)
            .remove({ force: true })
            .catch(() => {});
      }
      for (const pid of kubectls(cluster)) process.kill(pid, "SIGKILL");
      await registry.stop();
      if (image) await removeImage(docker, image).catch(() => {});
    }, 120_000);

    it("--keep-cluster: the cluster outlives the run, a crashed run's leftovers are found, the next up reuses it", async () => {
      const kept = `${cluster}-kept`;
      const upKept = (extra: string[] = []) =>
        runCli(
          [
            "up",
            "--runtime",
            "kind",
            "--cluster",
            kept,
            "--detach",
            "--json",
            "--image",
            image,
            "--models",
            models,
            ...portArgs(ports),
            ...extra,
          ],
          env,
        );
      // The offset model at +5, as the served one the explicit mode's edits below start from.
      await writeOffsetModel(models, "1");
      const offsetPy = path.join(models, "offset", "1", "model.py");
      await fsp.writeFile(offsetPy, (await fsp.readFile(offsetPy, "utf8")).replace("x + 1.0", "x + 5.0"));
      try {
        const first = await upKept(["--keep-cluster"]);
        expect(first.code).toBe(0);
        expect(JSON.parse((await runCli(["status", "--json"], env)).stdout).cluster).toMatchObject({
          name: kept,
          created: true,
          keepCluster: true,
        });
        // A crash: the supervisor is gone without a word, and so is the record.
        const state = JSON.parse(await fsp.readFile(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"), "utf8"));
        process.kill(state.supervisorPid, "SIGKILL");
        await fsp.rm(path.join(env.TRITON_DEV_STATE_DIR!, "run.json"));
        expect(kubectls(kept, true)).toHaveLength(2);
        const down = JSON.parse((await runCli(["down", "--json"], env)).stdout);
        expect(down).toMatchObject({ stopped: null, orphanClusters: [], orphanKindRuns: [state.runId] });
        expect(down.orphanKubectls).toHaveLength(2);
        expect(kubectls(kept)).toEqual([]);
        // The cluster stays (its nodes), the pod is gone.
        const left = await clusterContainers(docker, kept);
        expect(left.map((c) => c.Labels["io.x-k8s.kind.role"]).sort()).toEqual(["control-plane", "worker"]);
        const t0 = Date.now();
        // The next run, in explicit mode: loaded at start, reloaded through the repository API.
        const second = await upKept(["--reload", "explicit"]);
        expect(second.code, second.stderr).toBe(0);
        const steps = events(second)
          .filter((e) => e.type === "progress" && e.runtime === "kind")
          .map((e) => e.message as string);
        expect(steps).toContain(`using the kind cluster ${kept} (kept from an earlier run)`);
        expect(steps.some((m) => m.startsWith("creating the kind cluster"))).toBe(false);
        console.info(
          `up --runtime kind --detach on a kept cluster to every model READY: ${((Date.now() - t0) / 1000).toFixed(1)} s`,
        );
        expect(JSON.parse((await runCli(["status", "--json"], env)).stdout).reload).toEqual({
          mode: "explicit",
          pollSecs: expect.any(Number),
        });
        await untilOffsetServes(ports.http, 5, "explicit mode, at start");
        const file = path.join(models, "offset", "1", "model.py");
        await fsp.writeFile(file, (await fsp.readFile(file, "utf8")).replace("x + 5.0", "x + 7.0"));
        await untilOffsetServes(ports.http, 7, "explicit mode, after an edit");
        // A broken edit: its reload fails while the last good version serves. Triton then counts
        // the failed load as live until its 10 s exit timeout; down follows the unloads instead.
        const good = await fsp.readFile(file, "utf8");
        await fsp.writeFile(file, `${good}\nraise RuntimeError("a broken edit")\n`);
        const deadline = Date.now() + 60_000;
        let outcome = "";
        while (Date.now() < deadline && outcome !== "failed") {
          const edits = JSON.parse((await runCli(["status", "--json"], env)).stdout).edits as Array<{
            model: string;
            outcome: string;
          }>;
          outcome = edits.filter((e) => e.model === "offset").pop()?.outcome ?? "";
          if (outcome !== "failed") await sleep(300);
        }
        expect(outcome).toBe("failed");
        await untilOffsetServes(ports.http, 7, "explicit mode, after a broken edit");
        const [pod] = (await clusterContainers(docker, kept)).filter((c) => c.Labels["kind-emulator.pod"]);
        expect(pod).toBeDefined();
        // Triton's log from now until the pod's container stops, read from the daemon (down removes it).
        const logStream = (await docker.getContainer(pod!.Id).logs({
          follow: true,
          stdout: true,
          stderr: true,
          since: Math.floor(Date.now() / 1000) - 1,
        })) as NodeJS.ReadableStream;
        const logText = (async () => {
          let text = "";
          for await (const chunk of logStream) text += String(chunk);
          return text;
        })();
        const stopped = Date.now();
        // Waiting for every unload (the path a model with finalize takes), which the failed
        // reload's load Triton keeps counting would otherwise hold until its exit timeout.
        const stop = await runCli(["down"], { ...env, TRITON_DEV_STOP: "wait-all" });
        const downMs = Date.now() - stopped;
        const died = await dieTime(docker, pod!.Id, stopped);
        const termed = await eventTime(docker, pod!.Id, stopped, "kill", 15);
        console.info(
          `down (kind, kept cluster) after a failed reload: Triton's container got SIGTERM ${((termed - stopped) / 1000).toFixed(1)} s after down began ` +
            `and died ${((died - termed) / 1000).toFixed(1)} s later, ` +
            `down took ${(downMs / 1000).toFixed(1)} s; it said: ${stop.stderr.trim().split("\n").join(" | ")}`,
        );
        // Without the unload watch the pod's grace period (the emulator's 10 s) waited out Triton's
        // exit timeout after the SIGTERM (its log counting down to 0); with it the pod is deleted
        // once the unloads are done, before the countdown gets there on however busy a machine.
        expect(endedBeforeExitTimeout(await logText), `died ${died - termed} ms after SIGTERM`).toMatchObject({
          expired: false,
        });
        expect(stop.stderr).toMatch(/everything is unloaded; waiting for Triton to exit/);
        expect(stop.stdout).toContain(`stopped Triton (kind cluster ${kept}, kept; the run's objects removed`);
        expect((await clusterContainers(docker, kept)).filter((c) => c.Labels["kind-emulator.pod"])).toEqual([]);
        expect(kubectls(kept)).toEqual([]);
      } finally {
        await new Promise<void>((resolve) =>
          execFile(path.join(FAKE_BIN, "kind"), ["delete", "cluster", `--name=${kept}`], { env }, () => resolve()),
        );
      }
    }, 300_000);

    it("a Triton that keeps exiting: a clear crash-loop error with its last log lines, and nothing left", async () => {
      const crash = `${cluster}-crash`;
      // The test image with an entrypoint that fails the way a broken server build does.
      const broken = `triton-dev-test/crashing:${suffix}`;
      await new Promise<void>((resolve, reject) => {
        const p = spawn("docker", ["build", "-q", "-t", broken, "-"], {
          env: { ...process.env, DOCKER_BUILDKIT: "0" },
          stdio: ["pipe", "ignore", "pipe"],
        });
        let stderr = "";
        p.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
        p.stdin.end(
          `FROM ${image}\nENTRYPOINT ["/bin/sh", "-c", "echo 'tritonserver: cannot start (simulated failure)' >&2; exit 3", "sh"]\n`,
        );
        p.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`docker build failed: ${stderr}`))));
      });
      try {
        const t0 = Date.now();
        const r = await runCli(
          [
            "up",
            "--runtime",
            "kind",
            "--cluster",
            crash,
            "--detach",
            "--image",
            broken,
            "--models",
            models,
            "--timeout",
            "90",
            ...portArgs(ports),
          ],
          env,
        );
        console.info(`kind crash loop reported and cleaned up in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
        expect(r.code).toBe(1);
        expect(r.stderr).toMatch(
          /error: tritonserver in pod triton-inference-server-\S+ keeps exiting \(exit code 3; restarted 1 time\(s\)\); last log lines:/,
        );
        expect(r.stderr).toContain("tritonserver: cannot start (simulated failure)");
        expect(r.stderr).toContain(`logs triton-inference-server-`);
        expect(r.stderr).toContain("--previous");
        expect(await clusterContainers(docker, crash)).toEqual([]);
        await sleep(500);
        expect(kubectls(crash)).toEqual([]);
        for (const p of Object.values(ports)) expect(await isPortFree(p)).toBe(true);
        expect(JSON.parse((await runCli(["status", "--json"], env)).stdout).running).toBe(false);
      } finally {
        await removeImage(docker, broken).catch(() => {});
      }
    }, 150_000);
  },
);
