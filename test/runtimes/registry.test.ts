import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { UsageError, UserError } from "../../src/errors.js";
import { refuseForeignFlags } from "../../src/runtimes/flags.js";
import { RUNTIME_KINDS } from "../../src/runtimes/kinds.js";
import { dockerAutoChoice, type AutoProbe } from "../../src/runtimes/docker/auto.js";
import { createDockerDriver } from "../../src/runtimes/docker/driver.js";
import type { RuntimeDriver } from "../../src/runtimes/driver.js";
import { chooseRuntime, loadDriver } from "../../src/runtimes/registry.js";
import { resolvePaths } from "../../src/config/paths.js";
import { removeTempDirs, tempDir } from "../helpers/cli.js";

afterAll(removeTempDirs);

/** A DOCKER_HOST where nothing listens: a socket path in an empty folder. */
async function noDaemon(): Promise<NodeJS.ProcessEnv> {
  return { DOCKER_HOST: `unix://${path.join(await tempDir("nodocker"), "docker.sock")}` };
}

describe("runtime drivers", () => {
  it("loads a driver for every runtime, each naming its own kind", async () => {
    for (const kind of RUNTIME_KINDS) expect((await loadDriver(kind)).kind).toBe(kind);
  });

  it("refuses a flag the runtime does not take, naming the runtimes that do", () => {
    expect(() => refuseForeignFlags("local", { image: "x" })).toThrow(UsageError);
    expect(() => refuseForeignFlags("local", { image: "x", gpus: "all" })).toThrow(
      /--image, --gpus only apply to the docker, kind and cluster runtimes/,
    );
    expect(() => refuseForeignFlags("kind", { context: "team" })).toThrow(
      /--context only applies to the cluster runtime/,
    );
    expect(() => refuseForeignFlags("cluster", { keepCluster: true })).toThrow(
      /--keep-cluster only applies to the kind runtime/,
    );
    expect(() => refuseForeignFlags("docker", { cluster: "c" })).toThrow(/--cluster only applies to the kind runtime/);
    expect(() => refuseForeignFlags("cluster", { nodeImage: "kindest/node:v1.34.0" })).toThrow(
      /--node-image only applies to the kind runtime/,
    );
    expect(() => refuseForeignFlags("kind", { monitoring: true })).toThrow(
      /--monitoring only applies to the docker runtime/,
    );
    expect(() => refuseForeignFlags("docker", { image: "x", monitoring: true, keepCluster: false })).not.toThrow();
  });

  it("parses a runtime's own flags with its defaults, and refuses a bad value with the flag's name", async () => {
    const docker = await loadDriver("docker");
    expect(docker.options({})).toMatchObject({ gpus: "auto", shmBytes: 1024 ** 3, monitoring: false });
    expect(docker.options({ gpus: "1", shmSize: "2g" })).toMatchObject({
      gpus: { kind: "count", count: 1 },
      shmBytes: 2 * 1024 ** 3,
    });
    expect(() => docker.options({ gpus: "lots" })).toThrow(/--gpus must be/);
    const kind = await loadDriver("kind");
    expect(kind.options({ cluster: "mine", keepCluster: true })).toMatchObject({ cluster: "mine", keepCluster: true });
    expect(() => kind.options({ cluster: "Not_A_Name" })).toThrow(UsageError);
    expect(kind.options({ nodeImage: "triton-dev-test/kind-node:abc" })).toMatchObject({
      nodeImage: "triton-dev-test/kind-node:abc",
    });
    expect(kind.options({})).not.toHaveProperty("nodeImage");
    expect(() => kind.options({ nodeImage: "two words" })).toThrow(/--node-image must be an image reference/);
    const cluster = await loadDriver("cluster");
    expect(cluster.options({ context: "team", namespace: "ml", gpus: "2" })).toMatchObject({
      context: "team",
      namespace: "ml",
      gpus: { kind: "count", count: 2 },
    });
    expect(cluster.options({ context: "team" })).toMatchObject({ namespace: undefined, gpus: { kind: "none" } });
    expect(() => cluster.options({})).toThrow(/--runtime cluster needs --context NAME/);
    expect(() => cluster.options({ context: "team", namespace: "Not_A_Namespace" })).toThrow(/--namespace must be/);
  });
});

describe("--runtime auto", () => {
  it("stays local when no Docker daemon answers, and says why", async () => {
    expect(await chooseRuntime("auto", {}, await noDaemon(), 500)).toEqual({
      runtime: "local",
      why: "no Docker daemon answers",
    });
  });

  it("takes a container flag such as --image as asking for Docker, and says clearly when no daemon answers", async () => {
    const err = await chooseRuntime("auto", { image: "my/triton:1" }, await noDaemon(), 500).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    expect((err as Error).message).toMatch(/--image needs a container runtime, and no Docker daemon answers/);
  });

  it("refuses kind-only flags without --runtime kind", async () => {
    const err = await chooseRuntime("auto", { cluster: "c" }, await noDaemon(), 500).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).message).toBe("--cluster only applies to the kind runtime");
    expect((err as UsageError).hint).toBe("Add `--runtime kind`.");
  });

  it("keeps an explicit choice as it is", async () => {
    expect((await chooseRuntime("docker", {}, await noDaemon(), 500)).runtime).toBe("docker");
  });
});

describe("the automatic choice, as the docker driver answers it", () => {
  const probe =
    (found: Omit<AutoProbe, "image">) =>
    async (image: string | undefined): Promise<AutoProbe> => ({ image: image ?? "nvcr.io/x", ...found });

  it("chooses Docker with the NVIDIA runtime or the image present, and says why either way", async () => {
    expect(await dockerAutoChoice({}, {}, 500, probe({ answers: true, version: "27.1", nvidia: true }))).toEqual({
      chosen: true,
      why: "Docker 27.1 answers with the NVIDIA runtime",
    });
    expect(
      await dockerAutoChoice({}, {}, 500, probe({ answers: true, version: "27.1", imagePresent: true })),
    ).toMatchObject({ chosen: true, why: "Docker 27.1 answers and nvcr.io/x is present" });
    expect(
      await dockerAutoChoice({}, {}, 500, probe({ answers: true, version: "28.5.2", cdiSpec: "/etc/cdi/nvidia.yaml" })),
    ).toEqual({
      chosen: true,
      why: "Docker 28.5.2 answers and passes GPUs as CDI devices (nvidia.com/gpu, /etc/cdi/nvidia.yaml)",
    });
    expect(await dockerAutoChoice({}, {}, 500, probe({ answers: true, version: "27.1" }))).toMatchObject({
      chosen: false,
      why: expect.stringMatching(
        /no NVIDIA runtime, no CDI spec for its GPUs and no nvcr\.io\/x; the local runtime needs no download/,
      ),
    });
    expect(await dockerAutoChoice({ gpus: "all" }, {}, 500, probe({ answers: true, version: "27.1" }))).toMatchObject({
      chosen: true,
      why: "--gpus given and Docker 27.1 answers",
    });
  });

  it("asks each probing runtime's driver, then falls back to the runtime that says so, with the last reason", async () => {
    const asked: string[] = [];
    const load = async (kind: string): Promise<RuntimeDriver> =>
      ({
        kind,
        autoChoice: async () => {
          asked.push(kind);
          return { chosen: false, why: `${kind} says no` };
        },
      }) as unknown as RuntimeDriver;
    expect(await chooseRuntime("auto", {}, {}, 500, load)).toEqual({ runtime: "local", why: "docker says no" });
    expect(asked).toEqual(["docker"]);
  });
});

describe("a recorded run of a runtime this build does not have", () => {
  it("is refused with what to do, not a crash", async () => {
    const err = await loadDriver("podman" as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    expect((err as Error).message).toMatch(/names the runtime 'podman', which this triton-dev does not have/);
  });
});

describe("the docker driver under another engine", () => {
  it("speaks to the engine's endpoint under its own name (podman's service, say)", async () => {
    const seen: Array<string | undefined> = [];
    const driver = createDockerDriver({
      kind: "podman" as never,
      engineHost: (env) => `unix://${env.XDG_RUNTIME_DIR}/podman/podman.sock`,
      connect: (env) => {
        seen.push(env.DOCKER_HOST);
        throw new Error("no engine here");
      },
    });
    expect(driver.kind).toBe("podman");
    const paths = resolvePaths({ TRITON_DEV_HOME: await tempDir("engine") });
    await driver.cleanup(0, { paths, env: { XDG_RUNTIME_DIR: "/run/user/1000" } }).catch(() => undefined);
    expect(seen).toEqual(["unix:///run/user/1000/podman/podman.sock"]);
  });
});
