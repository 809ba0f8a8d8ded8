import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { UsageError, BugError, UserError } from "../../../src/errors.js";
import { forwardedPort, logArgs, portForwardArgs } from "../../../src/runtimes/clients/kubectl/connection.js";
import { parseKindVersion, parseKubectlVersion } from "../../../src/runtimes/kind/doctor.js";
import { WORKER_MOUNT } from "../../../src/runtimes/kind/kind-config.js";
import { renderManifests } from "../../../src/k8s/manifests.js";
import {
  kindGpus,
  manifestOptions,
  nodePath,
  parseClusterName,
  parseNodeImage,
  shmQuantity,
} from "../../../src/runtimes/kind/settings.js";
import { findOurKubectls } from "../../../src/runtimes/kind/teardown.js";
import { KubectlTools, ToolMissingError } from "../../../src/runtimes/clients/kubectl/tools.js";
import type { StartOptions } from "../../../src/runtimes/driver.js";

const start: StartOptions = {
  runId: "20260101T000000-abcdef",
  runDir: "/home/u/.cache/triton-dev/state/runs/20260101T000000-abcdef",
  repository: "/home/u/.cache/triton-dev/state/runs/20260101T000000-abcdef/repository",
  ports: { http: 8000, grpc: 8001, metrics: 8002 },
  host: "127.0.0.1",
  reload: "poll",
  pollSecs: 1,
  repositoryKey: {
    header: "triton-dev-key",
    value: "0123abcd",
    dir: "/home/u/.cache/triton-dev/state/runs/20260101T000000-abcdef/key",
  },
  logFile: "/home/u/.cache/triton-dev/state/runs/20260101T000000-abcdef/tritonserver.log",
};
const kind = {
  image: "nvcr.io/nvidia/tritonserver:24.10-py3",
  gpus: 0,
  shmBytes: 1024 ** 3,
  serviceMonitor: false,
  stateDir: "/home/u/.cache/triton-dev/state",
  workerMount: WORKER_MOUNT,
};

describe("the kind run's manifests", () => {
  it("never carry the key: the pod reads it from the run folder's key file through the preloaded library", () => {
    const objects = renderManifests(manifestOptions(start, kind));
    expect(JSON.stringify(objects)).not.toContain("0123abcd");
    expect(objects.map((o) => o.kind)).not.toContain("Secret");
    const dep = objects.find((o) => o.kind === "Deployment") as unknown as {
      spec: { template: { spec: { containers: Array<{ args: string[]; env: unknown[] }> } } };
    };
    const c = dep.spec.template.spec.containers[0]!;
    expect(c.env).toEqual(
      expect.arrayContaining([
        { name: "LD_PRELOAD", value: "/models/key/libtriton-dev-key.so" },
        { name: "TRITON_DEV_KEY_FILE", value: "/models/key/repository.key" },
      ]),
    );
    expect(c.args).toContain(
      "--http-restricted-api=model-repository,shared-memory,logging,trace:triton-dev-key=triton-dev-key-file\n",
    );
    expect(c.args).toContain(
      "--grpc-restricted-protocol=model-repository,shared-memory,logging,trace:triton-dev-key=triton-dev-key-file\n",
    );
  });

  it("mounts the run folder from the node, so the staged symlinks into store/ resolve in the pod", () => {
    const objects = renderManifests(manifestOptions(start, kind));
    const dep = objects.find((o) => o.kind === "Deployment") as unknown as {
      spec: { template: { metadata: { labels: Record<string, string> }; spec: Record<string, any> } };
    };
    const pod = dep.spec.template.spec;
    expect(pod.volumes[0]).toEqual({
      name: "models",
      hostPath: { path: "/triton-dev/runs/20260101T000000-abcdef", type: "Directory" },
    });
    const c = pod.containers[0];
    expect(c.args).toContain("--model-repository=/models/repository");
    expect(c.imagePullPolicy).toBe("Never");
    expect(pod.nodeSelector).toEqual({ "triton-dev.io/managed": "true" });
    expect(dep.spec.template.metadata.labels["triton-dev.io/run"]).toBe(start.runId);
    for (const o of objects) expect(o.metadata.labels?.["triton-dev.io/run"]).toBe(start.runId);
    expect(objects.map((o) => o.kind)).toEqual(["Namespace", "Deployment", "Service"]);
    expect(pod.volumes[1]).toEqual({ name: "dshm", emptyDir: { medium: "Memory", sizeLimit: "1024Mi" } });
  });

  it("renders explicit mode for --reload explicit: every model loaded at start, no poll flags", () => {
    const argsFor = (reload: "poll" | "explicit") =>
      (renderManifests(manifestOptions({ ...start, reload }, kind)).find((o) => o.kind === "Deployment") as any).spec
        .template.spec.containers[0].args as string[];
    const explicit = argsFor("explicit");
    expect(explicit).toEqual(expect.arrayContaining(["--model-control-mode=explicit", "--load-model=*"]));
    expect(
      explicit.filter((a) => a.startsWith("--model-control-mode") || a.startsWith("--repository-poll-secs")),
    ).toEqual(["--model-control-mode=explicit"]);
    const poll = argsFor("poll");
    expect(poll).toEqual(
      expect.arrayContaining(["--model-control-mode=poll", `--repository-poll-secs=${start.pollSecs}`]),
    );
    expect(poll).not.toContain("--load-model=*");
    // The kind run reads poll mode's outcomes from the log, and stops within the pod's grace.
    expect(poll).toEqual(expect.arrayContaining(["--log-info=true", "--exit-timeout-secs=10"]));
  });

  it("asks for the nvidia RuntimeClass and GPUs only with GPUs", () => {
    const pod = (
      renderManifests(manifestOptions(start, { ...kind, gpus: 2 })).find((o) => o.kind === "Deployment") as any
    ).spec.template.spec;
    expect(pod.runtimeClassName).toBe("nvidia");
    expect(pod.containers[0].resources.limits["nvidia.com/gpu"]).toBe(2);
    expect(manifestOptions(start, kind).runtimeClassName).toBeUndefined();
  });

  it("maps host paths into the node and refuses those outside the state folder", () => {
    expect(nodePath("/s", "/s/runs/x/repository", "/triton-dev")).toBe("/triton-dev/runs/x/repository");
    expect(() => nodePath("/s", "/elsewhere", "/triton-dev")).toThrow(BugError);
  });

  it("parses --cluster and --gpus for kind", () => {
    expect(parseClusterName("triton-dev-2")).toBe("triton-dev-2");
    expect(() => parseClusterName("Triton_Dev")).toThrow(UsageError);
    expect(kindGpus({ kind: "none" })).toBe(0);
    expect(kindGpus({ kind: "all" })).toBe("all");
    expect(kindGpus({ kind: "count", count: 2 })).toBe(2);
    expect(() => kindGpus({ kind: "devices", ids: ["0"] })).toThrow(UsageError);
    expect(shmQuantity(1024 ** 3)).toBe("1024Mi");
    expect(shmQuantity(1)).toBe("1Mi");
  });

  it("parses --node-image: an image reference, trimmed; anything else is a usage error naming the flag", () => {
    expect(parseNodeImage("kindest/node:v1.34.0")).toBe("kindest/node:v1.34.0");
    expect(parseNodeImage(" triton-dev-test/kind-node:0123abcd ")).toBe("triton-dev-test/kind-node:0123abcd");
    expect(parseNodeImage("localhost:5000/node@sha256:" + "a".repeat(64))).toBe(
      "localhost:5000/node@sha256:" + "a".repeat(64),
    );
    for (const bad of ["", "  ", "kindest/node v1", "-rm", "node;rm"]) {
      expect(() => parseNodeImage(bad)).toThrow(UsageError);
      expect(() => parseNodeImage(bad)).toThrow(/--node-image/);
    }
  });
});

describe("kubectl's arguments and output", () => {
  it("forwards the run's ports to the pod on the chosen address", () => {
    expect(
      portForwardArgs({
        namespace: "triton-dev",
        host: "127.0.0.1",
        pod: "p",
        ports: { http: 18000, grpc: 18001, metrics: 18002 },
      }),
    ).toEqual([
      "--namespace=triton-dev",
      "port-forward",
      "--address=127.0.0.1",
      "pod/p",
      "18000:8000",
      "18001:8001",
      "18002:8002",
    ]);
    expect(forwardedPort("Forwarding from 127.0.0.1:18000 -> 8000")).toBe(18000);
    expect(forwardedPort("Forwarding from [::1]:18000 -> 8000")).toBe(18000);
    expect(forwardedPort("Handling connection for 18000")).toBeUndefined();
  });

  it("follows the triton container's log with timestamps, from a position", () => {
    expect(logArgs({ namespace: "ns", pod: "p", follow: true, since: "2026-01-01T00:00:00.5Z" })).toEqual([
      "--namespace=ns",
      "logs",
      "pod/p",
      "--container=triton",
      "--timestamps",
      "--follow",
      "--since-time=2026-01-01T00:00:00.5Z",
    ]);
    expect(logArgs({ namespace: "ns", pod: "p", follow: false, previous: true, tail: 12 })).toEqual([
      "--namespace=ns",
      "logs",
      "pod/p",
      "--container=triton",
      "--timestamps",
      "--previous",
      "--tail=12",
    ]);
  });

  it("reads the tools' versions", () => {
    expect(parseKindVersion("kind v0.33.0 go1.24.2 linux/amd64")).toBe("v0.33.0");
    expect(parseKubectlVersion(JSON.stringify({ clientVersion: { gitVersion: "v1.33.1" } }))).toBe("v1.33.1");
    expect(parseKubectlVersion("nope")).toBeUndefined();
  });
});

describe("the tools", () => {
  it("names the install command when kind or kubectl is not on PATH", async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), "triton-dev-nopath-"));
    const tools = new KubectlTools(undefined, { PATH: empty });
    const e = await tools.kind(["version"]).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ToolMissingError);
    expect((e as UserError).hint).toContain("go install sigs.k8s.io/kind@v0.33.0");
    expect((e as UserError).hint).toContain("https://github.com/kubernetes-sigs/kind/releases");
    const k = await tools.run("kubectl", ["version", "--client"]).catch((x: unknown) => x);
    expect(k).toBeInstanceOf(ToolMissingError);
    expect((k as UserError).hint).toContain("https://kubernetes.io/docs/tasks/tools/");
  });

  it("finds our leftover port-forwards and log followers, and nothing else", () => {
    const proc = fs.mkdtempSync(path.join(os.tmpdir(), "triton-dev-proc-"));
    const write = (pid: number, argv: string[]) => {
      fs.mkdirSync(path.join(proc, String(pid)));
      fs.writeFileSync(path.join(proc, String(pid), "cmdline"), argv.join("\0") + "\0");
    };
    write(11, [
      "/usr/bin/kubectl",
      "--context=kind-triton-dev",
      "--namespace=triton-dev",
      "port-forward",
      "--address=127.0.0.1",
      "pod/p",
      "1:8000",
    ]);
    write(12, [
      "node",
      "/x/test/fixtures/kind/bin/kubectl",
      "--context=kind-triton-dev",
      "--namespace=triton-dev",
      "logs",
      "pod/p",
      "--follow",
    ]);
    write(13, [
      "/usr/bin/kubectl",
      "--context=kind-other",
      "--namespace=triton-dev",
      "port-forward",
      "pod/p",
      "1:8000",
    ]);
    write(14, [
      "/usr/bin/kubectl",
      "--context=kind-triton-dev",
      "--namespace=default",
      "port-forward",
      "pod/p",
      "1:8000",
    ]);
    write(15, ["/usr/bin/kubectl", "--context=kind-triton-dev", "--namespace=triton-dev", "get", "pods"]);
    expect(findOurKubectls("triton-dev", proc).sort()).toEqual([11, 12]);
  });
});
