import fsp from "node:fs/promises";
import path from "node:path";
import type Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, freePorts, portArgs, runCli, tempDir, testEnv } from "../helpers/cli.js";
import { endedBeforeExitTimeout } from "../helpers/exit-wait.js";
import {
  buildTestImage,
  dockerAvailability,
  dieTime,
  LocalRegistry,
  ourContainers,
  removeImage,
} from "../fixtures/docker/harness.js";

/**
 * `down` of a docker run after failed reloads, against a real daemon and the test image
 * (test/fixtures/docker/build-image.sh, pulled from a registry on 127.0.0.1): Triton 2.51 counts a
 * reload that failed beside a serving version as live until its 10 s exit timeout, so a plain
 * `docker stop` waits it out. The stop follows the unloads in the container's log instead.
 */
const availability = await dockerAvailability();
const skipReason = availability.ok ? "" : ` (skipped: ${availability.reason})`;
const PLAIN = path.join(ROOT, "test/fixtures/examples/misplaced/served");

interface Edit {
  id: number;
  model: string;
  outcome: string;
}

describe.skipIf(!availability.ok)(`down of a docker run after failed reloads${skipReason}`, () => {
  const docker = (availability as { docker: Docker }).docker;
  const registry = new LocalRegistry();
  let image = "";
  let env: NodeJS.ProcessEnv;
  let repo: string;

  const edits = async (): Promise<Edit[]> =>
    (JSON.parse((await runCli(["status", "--json"], env)).stdout) as { edits?: Edit[] }).edits ?? [];
  /** Makes a change, then waits (bounded) for the model's next edit to end. */
  const edit = async (model: string, change: () => Promise<void>): Promise<string> => {
    const before = Math.max(0, ...(await edits()).map((e) => e.id));
    await change();
    const deadline = Date.now() + 90_000;
    while (Date.now() < deadline) {
      const e = (await edits()).find((x) => x.model === model && x.id > before);
      if (e && ["ready", "failed", "refused", "unloaded", "unchanged"].includes(e.outcome)) return e.outcome;
      await new Promise((r) => setTimeout(r, 300));
    }
    throw new Error(`no outcome for the edit of ${model} within 90 s`);
  };

  beforeAll(async () => {
    const built = await buildTestImage();
    await registry.start(built.registryDir);
    image = registry.ref(built);
    env = await testEnv();
    repo = path.join(await tempDir("docker-down"), "models");
    for (const name of ["plain", "other"]) {
      await fsp.cp(PLAIN, path.join(repo, name), { recursive: true });
      const cfg = path.join(repo, name, "config.pbtxt");
      await fsp.writeFile(cfg, (await fsp.readFile(cfg, "utf8")).replace('"served"', `"${name}"`));
    }
  }, 900_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
    for (const c of (await ourContainers(docker, path.join(env.TRITON_DEV_STATE_DIR!, "runs")).catch(() => [])) ?? [])
      await docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => {});
    await registry.stop();
    if (image) await removeImage(docker, image).catch(() => {});
  }, 120_000);

  it("after an edit, a broken edit, its fix, a broken model added and deleted, down ends within seconds and says what it waits for", async () => {
    const ports = await freePorts();
    const up = await runCli(
      ["up", "--detach", "--runtime", "docker", "--image", image, "--models", repo, ...portArgs(ports)],
      env,
    );
    expect(up.code, up.stdout + up.stderr).toBe(0);
    const modelPy = path.join(repo, "plain/1/model.py");
    const original = await fsp.readFile(modelPy, "utf8");
    const broken = path.join(repo, "broken");
    const outcomes = [
      await edit("plain", () => fsp.writeFile(modelPy, `${original}\n# an edit\n`)),
      await edit("plain", () => fsp.writeFile(modelPy, `${original}\nraise RuntimeError("a broken edit")\n`)),
      await edit("plain", () => fsp.writeFile(modelPy, original)),
      await edit("broken", async () => {
        await fsp.cp(path.join(repo, "other"), broken, { recursive: true });
        const cfg = path.join(broken, "config.pbtxt");
        await fsp.writeFile(cfg, (await fsp.readFile(cfg, "utf8")).replace('"other"', '"broken"'));
        await fsp.appendFile(path.join(broken, "1/model.py"), '\nraise RuntimeError("a broken model")\n');
      }),
      await edit("broken", () => fsp.rm(broken, { recursive: true })),
    ];
    expect(outcomes).toEqual(["ready", "failed", "ready", "failed", "unloaded"]);

    const [triton] = (await ourContainers(docker, path.join(env.TRITON_DEV_STATE_DIR!, "runs"))).filter(
      (c) => c.Labels["dev.triton-dev.role"] === "triton",
    );
    expect(triton).toBeDefined();
    // Triton's log from now until its container stops (the stream ends then), read from the daemon
    // because `down` removes the container.
    const logStream = (await docker.getContainer(triton!.Id).logs({
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
    const started = Date.now();
    // Waiting for every unload (the path a model with finalize takes; the default is the test below).
    const down = await runCli(["down"], { ...env, TRITON_DEV_STOP: "wait-all" }, 120_000);
    const ms = Date.now() - started;
    expect(down.code, down.stderr).toBe(0);
    // When Triton's process ended, from the daemon's own record ("die"): removing the container
    // afterwards is the storage driver's work (vfs copies the whole image per container).
    const died = await dieTime(docker, triton!.Id, started);
    console.info(
      `docker down after failed reloads: Triton's container died ${((died - started) / 1000).toFixed(1)} s after down began, ` +
        `down took ${(ms / 1000).toFixed(1)} s; it said: ${down.stderr.trim().split("\n").join(" | ")}`,
    );
    // Triton's own exit takes its 10 s exit timeout after the SIGTERM, and `docker stop` waited it
    // out (its log counting down to 0). The stop ends the container once the unloads are done: the
    // countdown never gets there, however long a busy machine makes the CLI's start and the unloads.
    expect(endedBeforeExitTimeout(await logText), `down took ${ms} ms`).toMatchObject({ expired: false });
    expect(down.stderr).toMatch(/waiting for Triton to unload/);
    expect(await ourContainers(docker, path.join(env.TRITON_DEV_STATE_DIR!, "runs"))).toEqual([]);
    await expect(fetch(`http://127.0.0.1:${ports.http}/v2/health/live`)).rejects.toThrow();
  }, 400_000);

  it("down kills the container once nothing is in flight when no model defines finalize, without waiting for the unloads", async () => {
    const ports = await freePorts();
    const up = await runCli(
      ["up", "--detach", "--runtime", "docker", "--image", image, "--models", repo, ...portArgs(ports)],
      env,
    );
    expect(up.code, up.stdout + up.stderr).toBe(0);
    const [triton] = (await ourContainers(docker, path.join(env.TRITON_DEV_STATE_DIR!, "runs"))).filter(
      (c) => c.Labels["dev.triton-dev.role"] === "triton",
    );
    expect(triton).toBeDefined();
    const started = Date.now();
    const down = await runCli(["down", "--json"], env, 120_000);
    expect(down.code, down.stderr).toBe(0);
    const died = await dieTime(docker, triton!.Id, started);
    const stop = (JSON.parse(down.stdout) as { stopped: { stop?: unknown } }).stopped.stop;
    console.info(
      `docker down, no finalize: Triton's container died ${((died - started) / 1000).toFixed(1)} s after down began`,
    );
    expect(stop).toMatchObject({ waitedFor: [], ended: "ended" });
    expect(await ourContainers(docker, path.join(env.TRITON_DEV_STATE_DIR!, "runs"))).toEqual([]);
  }, 400_000);
});
