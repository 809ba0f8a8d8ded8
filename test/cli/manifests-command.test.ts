import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseModelsFrom } from "../../src/cli/manifests-action.js";
import { main } from "../../src/cli/main.js";
import type { Output } from "../../src/cli/output.js";
import { DEFAULT_IMAGE } from "../../src/runtimes/docker/settings.js";
import { parseYamlObjects } from "../../src/k8s/manifests.js";
import { posOf, pythonConfig, pythonModel, removeTempRepos, tempRepo, writeFiles } from "../repo/helpers.js";

type Any = Record<string, any>;

afterAll(removeTempRepos);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(args: string[]): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const output: Output = { out: (s) => void out.push(s), err: (s) => void err.push(s) };
  const code = await main(["manifests", ...args], output, {});
  return { code, stdout: out.join("\n"), stderr: err.join("\n") };
}

const objectsOf = (r: Run): Any[] => parseYamlObjects(r.stdout, "stdout") as Any[];
const deploymentOf = (r: Run): Any => objectsOf(r).find((o) => o.kind === "Deployment")!;
const tritonOf = (r: Run): Any => deploymentOf(r).spec.template.spec.containers[0];

describe("triton-dev manifests: stdout", () => {
  it("defaults: the article's Deployment (1 GPU, poll every 30 s) on the triton-models claim, a Service, a ServiceMonitor", async () => {
    const r = await run([]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    expect(objectsOf(r).map((o) => o.kind)).toEqual(["Deployment", "Service", "ServiceMonitor"]);
    const c = tritonOf(r);
    expect(c.image).toBe(DEFAULT_IMAGE);
    expect(c.args).toContain("--repository-poll-secs=30");
    expect(c.resources).toEqual({ limits: { "nvidia.com/gpu": 1 }, requests: { "nvidia.com/gpu": 1 } });
    const spec = deploymentOf(r).spec.template.spec;
    expect(spec.volumes).toContainEqual({ name: "models", persistentVolumeClaim: { claimName: "triton-models" } });
    expect(spec.volumes).toContainEqual({ name: "dshm", emptyDir: { medium: "Memory", sizeLimit: "1Gi" } });
  });

  it("the flags reach the objects", async () => {
    const r = await run([
      "--image",
      "registry.local/triton:24.10",
      "--gpus",
      "2",
      "--poll-secs",
      "10",
      "--namespace",
      "ml",
      "--name",
      "triton-a",
      "--models-from",
      "git:https://github.com/org/models.git#v2//serving",
      "--cpu",
      "8",
      "--memory",
      "16Gi",
      "--shm-size",
      "2Gi",
      "--service-monitor-label",
      "release=prometheus",
      "--repository-key-secret",
      "triton-key",
      "--runtime-class",
      "nvidia",
      "--node-selector",
      "pool=gpu",
      "--node-selector",
      "zone=a",
      "--image-pull-policy",
      "IfNotPresent",
    ]);
    expect(r.code, r.stderr).toBe(0);
    const objects = objectsOf(r);
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      "Namespace/ml",
      "Deployment/triton-a",
      "Service/triton-a",
      "ServiceMonitor/triton-a",
    ]);
    const d = deploymentOf(r);
    const spec = d.spec.template.spec;
    const c = spec.containers[0];
    expect(c.image).toBe("registry.local/triton:24.10");
    expect(c.imagePullPolicy).toBe("IfNotPresent");
    expect(c.args).toContain("--repository-poll-secs=10");
    expect(c.args).toContain("--model-repository=/git/current/serving");
    expect(c.args).toContain("--http-restricted-api=model-repository:triton-dev-key=$(TRITON_REPOSITORY_KEY)");
    expect(c.env).toContainEqual({
      name: "TRITON_REPOSITORY_KEY",
      valueFrom: { secretKeyRef: { name: "triton-key", key: "key" } },
    });
    expect(c.resources.limits).toEqual({ cpu: "8", memory: "16Gi", "nvidia.com/gpu": 2 });
    expect(spec.runtimeClassName).toBe("nvidia");
    expect(spec.nodeSelector).toEqual({ pool: "gpu", zone: "a" });
    expect(spec.volumes).toContainEqual({ name: "dshm", emptyDir: { medium: "Memory", sizeLimit: "2Gi" } });
    const sync = spec.containers.find((x: Any) => x.name === "git-sync");
    expect(sync.args).toEqual([
      "--repo=https://github.com/org/models.git",
      "--ref=v2",
      "--root=/git",
      "--link=current",
      "--period=10s",
    ]);
    expect(objects.find((o) => o.kind === "ServiceMonitor")!.metadata.labels.release).toBe("prometheus");
    // A referenced Secret is the user's to create: none is printed.
    expect(objects.some((o) => o.kind === "Secret")).toBe(false);
  });

  it("--gpus 0 --no-service-monitor: CPU only, Deployment and Service", async () => {
    const r = await run(["--gpus", "0", "--no-service-monitor"]);
    expect(objectsOf(r).map((o) => o.kind)).toEqual(["Deployment", "Service"]);
    expect(tritonOf(r).resources).toBeUndefined();
  });

  it("--json: the same objects as a JSON array", async () => {
    const r = await run(["--json", "--gpus", "0"]);
    expect(r.code).toBe(0);
    const fromYaml = objectsOf(await run(["--gpus", "0"]));
    expect(JSON.parse(r.stdout)).toEqual(fromYaml);
  });

  it("--help explains the model sources and the defaults", async () => {
    const r = await run(["--help"]);
    expect(r.code).toBe(0);
    for (const s of [
      "pvc:CLAIM[/SUBPATH]",
      "hostpath:PATH",
      "git:URL[#REF][//SUBDIR]",
      "pvc:triton-models",
      "16Gi",
      "--no-service-monitor",
      "--repository-key-secret",
    ]) {
      expect(r.stdout).toContain(s);
    }
  });
});

describe("triton-dev manifests --out", () => {
  it("writes one file per object in apply order, says which, and refuses to overwrite without --force", async () => {
    const dir = path.join(await tempRepo(), "k8s");
    const r = await run(["--out", dir, "--namespace", "ml"]);
    expect(r.code, r.stderr).toBe(0);
    const names = [
      "01-namespace-ml.yaml",
      "02-deployment-triton-inference-server.yaml",
      "03-service-triton-inference-server.yaml",
      "04-servicemonitor-triton-inference-server.yaml",
    ];
    expect(fs.readdirSync(dir).sort()).toEqual(names);
    for (const n of names) expect(r.stdout).toContain(path.join(dir, n));
    expect(r.stdout).toContain(`kubectl apply -f ${dir}`);
    const kinds = names.map((n) => parseYamlObjects(fs.readFileSync(path.join(dir, n), "utf8"), n).map((o) => o.kind));
    expect(kinds).toEqual([["Namespace"], ["Deployment"], ["Service"], ["ServiceMonitor"]]);

    await fsp.writeFile(path.join(dir, names[1]!), "mine\n");
    const again = await run(["--out", dir, "--namespace", "ml"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`error: not overwriting ${path.join(dir, names[0]!)}`);
    expect(again.stderr).toContain("hint: Pass --force");
    expect(fs.readFileSync(path.join(dir, names[1]!), "utf8")).toBe("mine\n");

    const forced = await run(["--out", dir, "--namespace", "ml", "--force"]);
    expect(forced.code, forced.stderr).toBe(0);
    expect(fs.readFileSync(path.join(dir, names[1]!), "utf8")).toContain("kind: Deployment");
  });

  it("--json --out: .json files and the list as JSON", async () => {
    const dir = path.join(await tempRepo(), "json");
    const r = await run(["--out", dir, "--json", "--no-service-monitor"]);
    expect(r.code, r.stderr).toBe(0);
    const files = ["01-deployment-triton-inference-server.json", "02-service-triton-inference-server.json"];
    expect(JSON.parse(r.stdout)).toEqual({ wrote: files.map((f) => path.join(dir, f)) });
    expect(JSON.parse(fs.readFileSync(path.join(dir, files[0]!), "utf8")).kind).toBe("Deployment");
  });

  it("refuses a file as --out", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { "file.txt": "x" });
    const r = await run(["--out", path.join(repo, "file.txt")]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("is a file, not a folder");
  });
});

describe("triton-dev manifests: bad flags", () => {
  const cases: Array<[string[], string]> = [
    [["--gpus", "-1"], "--gpus must be a whole number >= 0; got '-1'"],
    [["--gpus", "two"], "--gpus must be a whole number >= 0; got 'two'"],
    [["--poll-secs", "0"], "--poll-secs must be a whole number >= 1; got '0'"],
    [
      ["--shm-size", "1g"],
      "--shm-size must be a Kubernetes quantity; got '1g'\n  hint: Kubernetes writes binary sizes as Ki, Mi, Gi and Ti: 1Gi.",
    ],
    [
      ["--memory", "16gb"],
      "--memory must be a Kubernetes quantity; got '16gb'\n  hint: Kubernetes writes binary sizes as Ki, Mi, Gi and Ti: 16Gi.",
    ],
    [
      ["--cpu", "eight"],
      "--cpu must be a Kubernetes quantity; got 'eight'\n  hint: For example 8 (cores) or 500m (millicores).",
    ],
    [["--namespace", "My_NS"], "--namespace must be a namespace name; got 'My_NS'"],
    [["--name", "9triton"], "--name must be a Deployment and Service name; got '9triton'"],
    [["--image", "a b"], "--image must be an image reference; got 'a b'"],
    [
      ["--models-from", "s3://bucket/models"],
      "--models-from must be hostpath:PATH, pvc:CLAIM[/SUBPATH] or git:URL[#REF][//SUBDIR]; got 's3://bucket/models'",
    ],
    [
      ["--models-from", "hostpath:models"],
      "--models-from must be hostpath: followed by an absolute path on the node; got 'hostpath:models'",
    ],
    [
      ["--models-from", "pvc:Models"],
      "--models-from must be pvc: followed by a PersistentVolumeClaim name; got 'pvc:Models'",
    ],
    [
      ["--models-from", "pvc:models/../etc"],
      "--models-from must be pvc:CLAIM/SUBPATH with a relative SUBPATH inside the volume",
    ],
    [["--models-from", "git:models"], "--models-from must be git: followed by a repository URL; got 'git:models'"],
    [
      ["--models-from", "git:https://h/r.git#"],
      "--models-from must be git:URL#REF with a branch, tag or commit after '#'",
    ],
    [["--node-selector", "gpu"], "--node-selector must be KEY=VALUE with a Kubernetes label name and value; got 'gpu'"],
    [["--service-monitor-label", "release=a b"], "--service-monitor-label must be KEY=VALUE"],
    [["--repository-key-secret", "Key"], "--repository-key-secret must be a Secret name; got 'Key'"],
    [["--runtime-class", "NVIDIA"], "--runtime-class must be a RuntimeClass name; got 'NVIDIA'"],
  ];
  for (const [args, message] of cases) {
    it(`${args.join(" ")}`, async () => {
      const r = await run(args);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toContain(`error: ${message}`);
    });
  }

  it("an unknown --image-pull-policy is commander's usage error", async () => {
    const r = await run(["--image-pull-policy", "Sometimes"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("Allowed choices are IfNotPresent, Always, Never");
  });
});

describe("parseModelsFrom", () => {
  const cases: Array<[string, unknown]> = [
    ["pvc:triton-models", { kind: "pvc", claimName: "triton-models" }],
    ["pvc:shared/triton/models/", { kind: "pvc", claimName: "shared", subPath: "triton/models" }],
    ["hostpath:/data/models", { kind: "hostPath", path: "/data/models" }],
    ["hostPath:/data/models", { kind: "hostPath", path: "/data/models" }],
    [
      "git:https://github.com/org/models.git",
      { kind: "git", repo: "https://github.com/org/models.git", branch: "HEAD", periodSecs: 30 },
    ],
    [
      "git:https://github.com/org/models.git#main",
      { kind: "git", repo: "https://github.com/org/models.git", branch: "main", periodSecs: 30 },
    ],
    [
      "git:https://github.com/org/models.git//triton/repo",
      { kind: "git", repo: "https://github.com/org/models.git", branch: "HEAD", subdir: "triton/repo", periodSecs: 30 },
    ],
    [
      "git:https://github.com/org/models.git#v1.2//triton",
      { kind: "git", repo: "https://github.com/org/models.git", branch: "v1.2", subdir: "triton", periodSecs: 30 },
    ],
    [
      "git:git@github.com:org/models.git#dev//models",
      { kind: "git", repo: "git@github.com:org/models.git", branch: "dev", subdir: "models", periodSecs: 30 },
    ],
    [
      "git:ssh://git@host:2222/org/models.git",
      { kind: "git", repo: "ssh://git@host:2222/org/models.git", branch: "HEAD", periodSecs: 30 },
    ],
  ];
  for (const [spec, expected] of cases) {
    it(spec, () => expect(parseModelsFrom(spec, 30)).toEqual(expected));
  }
});

describe("triton-dev manifests --models", () => {
  it("lints the repository first and refuses on errors, compiler style, printing nothing on stdout", async () => {
    const repo = await tempRepo();
    const cfg = pythonConfig("a").replace("max_batch_size: 8", "max_batch_size: -8");
    await writeFiles(repo, pythonModel("a", cfg));
    const r = await run(["--models", repo]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    const at = posOf(cfg, "-8");
    expect(r.stderr).toContain(
      `${path.join(repo, "a/config.pbtxt")}:${at.line}:${at.column}: error: max_batch_size is -8`,
    );
    expect(r.stderr).toContain("has 1 error(s) (above) that Triton would refuse; no manifests rendered");
  });

  it("a KIND_GPU model is an error with --gpus 0 (the pod has no GPU) and fine with --gpus 1", async () => {
    const repo = await tempRepo();
    const cfg = `${pythonConfig("g")}instance_group [ { kind: KIND_GPU } ]\n`;
    await writeFiles(repo, pythonModel("g", cfg));
    const cpu = await run(["--models", repo, "--gpus", "0"]);
    expect(cpu.code).toBe(1);
    expect(cpu.stderr).toMatch(/config\.pbtxt:\d+:\d+: error: .*KIND_GPU/);
    const gpu = await run(["--models", repo, "--gpus", "1"]);
    expect(gpu.code, gpu.stderr).toBe(0);
    expect(objectsOf(gpu).map((o) => o.kind)).toContain("Deployment");
  });

  it("a clean repository renders as usual; a missing one is a usage error", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, pythonModel("a"));
    const ok = await run(["--models", repo, "--gpus", "0"]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(objectsOf(ok).length).toBe(3);
    const missing = await run(["--models", path.join(os.tmpdir(), "no-such-models-dir")]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("is not a folder");
  });
});

describe("triton-dev manifests --models: the Deployment follows the repository", () => {
  const cpuModel = (name: string, count = 1) =>
    pythonModel(
      name,
      pythonConfig(
        name,
        `input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]\ninstance_group [ { count: ${count} kind: KIND_CPU } ]\n`,
      ),
    );

  it("asks for no GPU when every model is KIND_CPU, requests CPU and memory, and names models with requirements.txt", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { ...cpuModel("a", 2), ...cpuModel("b"), "b/requirements.txt": "pillow==10.4.0\n" });
    const r = await run(["--models", repo]);
    expect(r.code, r.stderr).toBe(0);
    const res = tritonOf(r).resources;
    expect(res.limits).toBeUndefined();
    expect(res.requests["nvidia.com/gpu"]).toBeUndefined();
    expect(res.requests.cpu).toBe("3");
    // Triton's 512 Mi, a 256 Mi stub per python instance, and the (small) model files.
    expect(res.requests.memory).toBe("1281Mi");
    expect(r.stderr).toMatch(/note: every model of .* runs on KIND_CPU: no nvidia.com\/gpu asked for/);
    expect(r.stderr).toMatch(/note: b list packages in requirements.txt, which .* does not install/);
    // Flags the user gives win: --gpus and --cpu/--memory (requests = limits).
    const given = await run(["--models", repo, "--gpus", "1", "--cpu", "4", "--memory", "8Gi"]);
    expect(tritonOf(given).resources).toEqual({
      limits: { cpu: "4", memory: "8Gi", "nvidia.com/gpu": 1 },
      requests: { cpu: "4", memory: "8Gi", "nvidia.com/gpu": 1 },
    });
    // A model without instance_group may take a GPU: the article's one GPU stays.
    await writeFiles(repo, pythonModel("c"));
    expect(tritonOf(await run(["--models", repo])).resources.limits).toEqual({ "nvidia.com/gpu": 1 });
  });

  it("lets the backend decide GPU and image: a TensorRT-LLM model on KIND_CPU gets a GPU and the trtllm image, in words of images, not of kind", async () => {
    const repo = await tempRepo();
    // tensorrtllm_backend's configs say KIND_CPU by convention; the backend still needs the GPU.
    await writeFiles(repo, {
      "tensorrt_llm/config.pbtxt": `name: "tensorrt_llm"\nbackend: "tensorrtllm"\nmax_batch_size: 8\ninput [ { name: "input_ids" data_type: TYPE_INT32 dims: [ -1 ] } ]\noutput [ { name: "output_ids" data_type: TYPE_INT32 dims: [ -1 ] } ]\ninstance_group [ { count: 1 kind: KIND_CPU } ]\n`,
      "tensorrt_llm/1/.keep": "",
      ...cpuModel("preprocessing"),
    });
    const r = await run(["--models", repo]);
    expect(r.code, r.stderr).toBe(0);
    const t = tritonOf(r);
    expect(t.image).toBe("nvcr.io/nvidia/tritonserver:24.10-trtllm-python-py3");
    expect(t.resources.limits).toEqual({ "nvidia.com/gpu": 1 });
    expect(r.stderr).toMatch(
      /note: tensorrt_llm uses the tensorrtllm backend, which nvcr.io\/nvidia\/tritonserver:24.10-py3 does not have: image nvcr.io\/nvidia\/tritonserver:24.10-trtllm-python-py3/,
    );
    expect(r.stderr).toMatch(/note: tensorrt_llm runs on a backend that needs a GPU, whatever its instance_group says/);
    expect(r.stderr).not.toMatch(/kind runtime|no nvidia.com\/gpu asked for/);
    // An image the user names is kept, and what it lacks is said with the image that has it.
    const given = await run(["--models", repo, "--image", "nvcr.io/nvidia/tritonserver:24.10-vllm-python-py3"]);
    expect(tritonOf(given).image).toBe("nvcr.io/nvidia/tritonserver:24.10-vllm-python-py3");
    expect(given.stderr).toMatch(
      /warning: model 'tensorrt_llm' uses the tensorrtllm backend, which the image nvcr.io\/nvidia\/tritonserver:24.10-vllm-python-py3 does not have: TensorRT-LLM models run in nvcr.io\/nvidia\/tritonserver:24.10-trtllm-python-py3/,
    );
    // --gpus 0 against a GPU-only backend: said, not silently rendered.
    expect((await run(["--models", repo, "--gpus", "0"])).stderr).toMatch(
      /tensorrt_llm needs a GPU .* --gpus 0 asks for none/,
    );
  });

  it("a vLLM model gets the vllm image", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, {
      "vllm_model/config.pbtxt": `name: "vllm_model"\nbackend: "vllm"\ninstance_group [ { count: 1 kind: KIND_MODEL } ]\n`,
      "vllm_model/1/model.json": '{"model": "facebook/opt-125m"}\n',
    });
    const r = await run(["--models", repo]);
    expect(r.code, r.stderr).toBe(0);
    expect(tritonOf(r).image).toBe("nvcr.io/nvidia/tritonserver:24.10-vllm-python-py3");
    expect(tritonOf(r).resources.limits).toEqual({ "nvidia.com/gpu": 1 });
    expect(r.stderr).not.toMatch(/kind runtime/);
  });

  it("--require-model: Ready once the named models are, one broken model not holding the pod back", async () => {
    const r = await run(["--require-model", "a", "--require-model", "b"]);
    expect(r.code, r.stderr).toBe(0);
    const t = tritonOf(r);
    expect(t.args).toContain("--strict-readiness=false");
    expect(t.args).toContain("--exit-on-error=false");
    expect(t.readinessProbe.exec.command.slice(0, 2)).toEqual(["python3", "-c"]);
    expect(t.readinessProbe.exec.command.slice(3)).toEqual(["a", "b"]);
    expect(t.readinessProbe.exec.command[2]).toContain("/v2/models/{m}/ready");
    // Without it, ready means every model loaded (Triton's strict readiness).
    const plain = tritonOf(await run([]));
    expect(plain.args).not.toContain("--strict-readiness=false");
    expect(plain.readinessProbe.httpGet.path).toBe("/v2/health/ready");
    expect((await run(["--require-model", "a b"])).code).not.toBe(0);
  });
});
