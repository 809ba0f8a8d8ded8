import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Diagnostic } from "../../src/repo/diagnostics.js";
import { type LintOptions, lintRepository } from "../../src/repo/lint.js";
import {
  ECHO_ONNX,
  ECHO_IO,
  ECHO_MODEL_PY,
  posOf,
  pythonConfig,
  summary,
  tempRepo,
  writeFiles,
  removeTempRepos,
} from "./helpers.js";
import { lintFacts } from "../../src/runtimes/kinds.js";

afterAll(removeTempRepos);

/** Lints a repository holding model `m` (config + 1/model.py unless `files` says otherwise). */
async function lint(
  config: string | undefined,
  files: Record<string, string | Uint8Array> = { "m/1/model.py": ECHO_MODEL_PY },
  options: LintOptions = {},
) {
  const repo = await tempRepo();
  await writeFiles(repo, { ...(config !== undefined ? { "m/config.pbtxt": config } : {}), ...files });
  const result = await lintRepository(repo, options);
  const m = result.models.find((x) => x.name === "m");
  return { repo, result, diagnostics: m?.diagnostics ?? [], configFile: path.join(repo, "m", "config.pbtxt") };
}

/** The one diagnostic with `code`, checked to sit at `where` in `config`. */
function expectOne(
  ds: Diagnostic[],
  code: string,
  where: { line: number; column: number } | undefined,
  message: string,
  severity: "error" | "warning" = "error",
): Diagnostic {
  const found = ds.filter((d) => d.code === code);
  expect(found, summary(ds).join("\n")).toHaveLength(1);
  const d = found[0]!;
  expect(d.severity).toBe(severity);
  if (where) expect({ line: d.line, column: d.column }).toEqual(where);
  expect(d.message).toContain(message);
  expect(d.hint, "every diagnostic says how to fix it").toBeTruthy();
  expect(d.model).toBe("m");
  return d;
}

describe("a clean model", () => {
  it("has no diagnostics", async () => {
    const { diagnostics } = await lint(pythonConfig("m"));
    expect(summary(diagnostics)).toEqual([]);
  });

  it("may leave the name out", async () => {
    const { diagnostics } = await lint(pythonConfig("m").replace('name: "m"\n', ""));
    expect(summary(diagnostics)).toEqual([]);
  });
});

describe("name, platform and backend", () => {
  it("name must equal the directory", async () => {
    const cfg = pythonConfig("other");
    const { diagnostics, configFile } = await lint(cfg);
    const d = expectOne(
      diagnostics,
      "name-mismatch",
      posOf(cfg, '"other"'),
      "model name 'other' does not match its directory 'm'",
    );
    expect(d.file).toBe(configFile);
    expect(d.hint).toContain('name: "m"');
  });

  it("needs a platform or a backend", async () => {
    const cfg = `name: "m"\nmax_batch_size: 8\n${ECHO_IO}`;
    const { diagnostics } = await lint(cfg, { "m/1/": "" });
    expectOne(diagnostics, "backend-missing", { line: 1, column: 1 }, "neither platform nor backend");
  });

  it("warns when Triton would infer the backend from the files", async () => {
    const cfg = `name: "m"\nmax_batch_size: 8\n${ECHO_IO}`;
    const { diagnostics } = await lint(cfg);
    const d = expectOne(
      diagnostics,
      "backend-inferred",
      { line: 1, column: 1 },
      "Triton infers backend 'python' from 1/model.py",
      "warning",
    );
    expect(d.hint).toBe('Write backend: "python" so the model does not depend on which files are present.');
  });

  it('rejects the article\'s platform: "onnxruntime", naming both fixes', async () => {
    const cfg = `name: "m"\nplatform: "onnxruntime"\nmax_batch_size: 8\n${ECHO_IO}`;
    const { diagnostics } = await lint(cfg);
    const d = expectOne(diagnostics, "platform-unknown", posOf(cfg, '"onnxruntime"'), "unknown platform 'onnxruntime'");
    expect(d.hint).toBe(
      `'onnxruntime' is a backend name: write platform: "onnxruntime_onnx" or backend: "onnxruntime".`,
    );
  });

  it("suggests the platform a typo meant", async () => {
    const cfg = `name: "m"\nplatform: "tensorrt_plna"\n${ECHO_IO}`;
    const { diagnostics } = await lint(cfg);
    expect(expectOne(diagnostics, "platform-unknown", posOf(cfg, '"tensorrt_plna"'), "unknown platform").hint).toBe(
      'Did you mean platform: "tensorrt_plan"?',
    );
  });

  it("rejects a platform and backend that do not go together", async () => {
    const cfg = `name: "m"\nplatform: "tensorrt_plan"\nbackend: "onnxruntime"\n${ECHO_IO}`;
    const { diagnostics } = await lint(cfg);
    expectOne(
      diagnostics,
      "platform-backend-mismatch",
      posOf(cfg, '"onnxruntime"'),
      "platform 'tensorrt_plan' is served by backend 'tensorrt', not 'onnxruntime'",
    );
    expect(diagnostics.filter((d) => d.code === "model-file-missing")).toEqual([]);
  });

  it("rejects an unknown platform next to a backend Triton type-checks", async () => {
    const cfg = `name: "m"\nplatform: "foo"\nbackend: "pytorch"\n${ECHO_IO}`;
    const { diagnostics } = await lint(cfg);
    expectOne(
      diagnostics,
      "platform-backend-mismatch",
      posOf(cfg, '"foo"'),
      "platform 'foo' does not go with backend 'pytorch'",
    );
  });

  it("accepts any platform next to the python backend, as Triton does", async () => {
    const cfg = `name: "m"\nplatform: "foo"\nbackend: "python"\n${ECHO_IO}`;
    const { diagnostics } = await lint(cfg);
    expect(summary(diagnostics)).toEqual([]);
  });

  it("catches a misspelt backend", async () => {
    const cfg = pythonConfig("m").replace('"python"', '"pyton"');
    const { diagnostics } = await lint(cfg, undefined, { ...lintFacts("local") });
    expect(expectOne(diagnostics, "backend-unknown", posOf(cfg, '"pyton"'), "unknown backend 'pyton'").hint).toBe(
      'Did you mean backend: "python"?',
    );
    expect(diagnostics.filter((d) => d.code === "backend-unavailable")).toEqual([]);
  });

  it("warns about a custom backend", async () => {
    const cfg = pythonConfig("m").replace('"python"', '"mycustombackend"');
    const { diagnostics } = await lint(cfg);
    expectOne(
      diagnostics,
      "backend-custom",
      posOf(cfg, '"mycustombackend"'),
      "backend 'mycustombackend' is not one Triton ships",
      "warning",
    );
  });

  it("warns when the chosen runtime lacks the backend", async () => {
    const cfg = `name: "m"\nplatform: "tensorrt_plan"\nmax_batch_size: 8\n${ECHO_IO}`;
    const { diagnostics } = await lint(cfg, { "m/1/model.plan": "x" }, { ...lintFacts("local") });
    const d = expectOne(
      diagnostics,
      "backend-unavailable",
      posOf(cfg, '"tensorrt_plan"'),
      "backend 'tensorrt' is not in the local runtime",
      "warning",
    );
    expect(d.hint).toContain("--runtime docker");
    const docker = await lint(cfg, { "m/1/model.plan": "x" }, { ...lintFacts("docker") });
    expect(summary(docker.diagnostics).filter((x) => x.includes("backend-unavailable"))).toEqual([]);
  });

  it("takes an onnxruntime model on the local runtime, which serves it through the python backend", async () => {
    const cfg = `name: "m"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\n${ECHO_IO}`;
    const { diagnostics } = await lint(cfg, { "m/1/model.onnx": ECHO_ONNX }, { ...lintFacts("local") });
    expect(summary(diagnostics)).toEqual([]);
  });

  it("names the image flavour a vLLM or TensorRT-LLM model runs in, which the default image is not, and following it clears the warning", async () => {
    for (const [backend, flavour] of [
      ["vllm", "24.10-vllm-python-py3"],
      ["tensorrtllm", "24.10-trtllm-python-py3"],
    ] as const) {
      const cfg = `name: "m"\nbackend: "${backend}"\nmax_batch_size: 0\n${ECHO_IO}`;
      for (const runtime of ["local", "docker", "kind"] as const) {
        const { diagnostics } = await lint(cfg, { "m/1/model.json": "{}" }, lintFacts(runtime));
        const d = expectOne(
          diagnostics,
          "backend-unavailable",
          posOf(cfg, `"${backend}"`),
          `run in the docker or kind runtime with the image nvcr.io/nvidia/tritonserver:${flavour} (the default nvcr.io/nvidia/tritonserver:24.10-py3 has no ${backend} backend), on a machine with an NVIDIA GPU`,
          "warning",
        );
        expect(d.hint).toContain(`--image nvcr.io/nvidia/tritonserver:${flavour}`);
        expect(d.message).not.toMatch(/saving a fix/);
      }
      // The hint followed: the runtime with that image has the backend.
      const image = `nvcr.io/nvidia/tritonserver:${flavour}`;
      for (const runtime of ["docker", "kind", "cluster"] as const) {
        const { diagnostics } = await lint(cfg, { "m/1/model.json": "{}" }, lintFacts(runtime, image));
        expect(diagnostics.filter((x) => x.code === "backend-unavailable")).toEqual([]);
      }
      // The release of the image given is kept; an image of unknown contents is not judged.
      const other = await lint(
        cfg,
        { "m/1/model.json": "{}" },
        { ...lintFacts("docker", "nvcr.io/nvidia/tritonserver:25.01-py3") },
      );
      expect(other.diagnostics.find((x) => x.code === "backend-unavailable")?.hint).toContain(
        `nvcr.io/nvidia/tritonserver:25.01-${flavour.replace(/^24\.10-/, "")}`,
      );
      const custom = await lint(
        cfg,
        { "m/1/model.json": "{}" },
        { ...lintFacts("docker", "registry.example/triton-custom:1") },
      );
      expect(custom.diagnostics.filter((x) => x.code === "backend-unavailable")).toEqual([]);
    }
  });

  it("a KIND_GPU hint promises KIND_CPU only where the backend runs on a CPU and the runtime has it", async () => {
    const io = ECHO_IO;
    const onGpu = (backend: string) =>
      `name: "m"\nbackend: "${backend}"\nmax_batch_size: 0\n${io}instance_group [ { kind: KIND_GPU } ]\n`;
    // A python model: KIND_CPU runs it here, and following the hint clears the warning.
    const py = await lint(onGpu("python"), { "m/1/model.py": "" }, { ...lintFacts("local"), gpuAvailable: false });
    expect(py.diagnostics.find((d) => d.code === "gpu-unavailable")?.hint).toMatch(/^Use kind: KIND_CPU to run here/);
    const followed = await lint(
      onGpu("python").replace("KIND_GPU", "KIND_CPU"),
      { "m/1/model.py": "" },
      {
        ...lintFacts("local"),
        gpuAvailable: false,
      },
    );
    expect(followed.diagnostics.filter((d) => d.code === "gpu-unavailable")).toEqual([]);
    // TorchScript on the local runtime: KIND_CPU would not make it load here.
    const pt = await lint(onGpu("pytorch"), { "m/1/model.pt": "x" }, { ...lintFacts("local"), gpuAvailable: false });
    const hint = pt.diagnostics.find((d) => d.code === "gpu-unavailable")?.hint ?? "";
    if (pt.diagnostics.some((d) => d.code === "backend-unavailable")) {
      expect(hint).not.toMatch(/to run here/);
      expect(hint).toContain("the local runtime has no pytorch backend");
    } else {
      // Through PyTorch in the model's environment: the hint names what else KIND_CPU needs here.
      expect(hint).toMatch(
        /^Use kind: KIND_CPU to run here, with torch in the model's environment \(list torch in a requirements\.txt/,
      );
    }
    // A backend that runs only on a GPU never suggests KIND_CPU.
    const trt = await lint(
      onGpu("tensorrt"),
      { "m/1/model.plan": "x" },
      { ...lintFacts("docker"), gpuAvailable: false },
    );
    expect(trt.diagnostics.find((d) => d.code === "gpu-unavailable")?.hint).toMatch(/runs only on a GPU/);
  });

  it("backend tensorflow needs a platform it can tell", async () => {
    const cfg = `name: "m"\nbackend: "tensorflow"\n${ECHO_IO}`;
    expectOne(
      (await lint(cfg, { "m/1/model.bin": "x" })).diagnostics,
      "platform-missing",
      posOf(cfg, '"tensorflow"'),
      "backend 'tensorflow' needs a platform",
    );
    // Accepted, though lint cannot read a GraphDef without TensorFlow and says so.
    expect((await lint(cfg, { "m/1/model.graphdef": "x" })).diagnostics.map((d) => `${d.severity} ${d.code}`)).toEqual([
      "warning model-file-not-checked",
    ]);
  });

  it("an ensemble has no backend", async () => {
    const cfg = `name: "m"\nplatform: "ensemble"\nbackend: "python"\nensemble_scheduling { step [ ] }`;
    const { diagnostics } = await lint(cfg, { "m/1/": "" });
    expectOne(
      diagnostics,
      "ensemble-backend",
      posOf(cfg, '"python"'),
      "an ensemble has no backend, but backend is 'python'",
    );
  });

  it("platform ensemble needs ensemble_scheduling, and the reverse", async () => {
    const a = `name: "m"\nplatform: "ensemble"\n`;
    expectOne(
      (await lint(a, { "m/1/": "" })).diagnostics,
      "ensemble-no-scheduling",
      posOf(a, '"ensemble"'),
      "platform is 'ensemble' but there is no ensemble_scheduling",
    );
    const b = `name: "m"\nbackend: "python"\nensemble_scheduling { }`;
    expectOne(
      (await lint(b)).diagnostics,
      "ensemble-platform",
      posOf(b, "ensemble_scheduling"),
      'ensemble_scheduling without platform: "ensemble"',
    );
  });

  it("max_batch_size is not negative", async () => {
    const cfg = pythonConfig("m", ECHO_IO, -1);
    expectOne(
      (await lint(cfg)).diagnostics,
      "max-batch-size-negative",
      posOf(cfg, "-1\n"),
      "max_batch_size is -1; it must be 0 or more",
    );
  });
});

describe("inputs and outputs", () => {
  const io = (input: string) =>
    pythonConfig("m", `input [ ${input} ]\noutput [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n`);

  it("need a name", async () => {
    const cfg = io("{ data_type: TYPE_FP32 dims: [ 1 ] }");
    expectOne((await lint(cfg)).diagnostics, "io-name-missing", posOf(cfg, "{ data_type"), "input 1 has no name");
  });

  it("need a data_type", async () => {
    const cfg = io('{ name: "X" dims: [ 1 ] }');
    expectOne(
      (await lint(cfg)).diagnostics,
      "io-data-type-missing",
      posOf(cfg, '{ name: "X"'),
      "input 'X' has no data_type",
    );
  });

  it("need dims", async () => {
    const cfg = io('{ name: "X" data_type: TYPE_FP32 }');
    const d = expectOne(
      (await lint(cfg)).diagnostics,
      "io-dims-missing",
      posOf(cfg, '{ name: "X"'),
      "input 'X' has no dims",
    );
    expect(d.hint).toContain("without the batch dimension");
  });

  it.each([
    ["0", "dimension 1 of input 'X' is 0: a dimension must be >= 1, or -1 for a variable size"],
    ["-2", "dimension 1 of input 'X' is -2"],
  ])("reject dimension %s", async (dim, message) => {
    const cfg = io(`{ name: "X" data_type: TYPE_FP32 dims: [ 3, ${dim} ] }`);
    expectOne((await lint(cfg)).diagnostics, "dims-invalid", posOf(cfg, `${dim} ]`), message);
  });

  it("check reshape dimensions and element count", async () => {
    const bad = io('{ name: "X" data_type: TYPE_FP32 dims: [ 4 ] reshape { shape: [ 3 ] } }');
    expectOne(
      (await lint(bad)).diagnostics,
      "reshape-count",
      posOf(bad, "reshape"),
      "reshape of input 'X' changes the element count (4 -> 3)",
    );
    const zero = io('{ name: "X" data_type: TYPE_FP32 dims: [ 4 ] reshape { shape: [ 0 ] } }');
    expectOne(
      (await lint(zero)).diagnostics,
      "reshape-invalid",
      posOf(zero, "0 ]"),
      "reshape dimension 0 of input 'X' is 0",
    );
    const wild = io('{ name: "X" data_type: TYPE_FP32 dims: [ 2, 4, -1, 6 ] reshape { shape: [ 4, -1, 2, 6 ] } }');
    expectOne(
      (await lint(wild)).diagnostics,
      "reshape-count",
      posOf(wild, "reshape"),
      "changes the element count between variable dimensions",
    );
    const wildCount = io('{ name: "X" data_type: TYPE_FP32 dims: [ -1, 2 ] reshape { shape: [ -1, -1 ] } }');
    expectOne(
      (await lint(wildCount)).diagnostics,
      "reshape-count",
      posOf(wildCount, "reshape"),
      "different number of variable dimensions",
    );
  });

  it("accept reshapes Triton accepts", async () => {
    for (const r of [
      "dims: [ 2, 4, -1, 6 ] reshape { shape: [ 8, -1, 1, 6 ] }",
      "dims: [ 1 ] reshape { shape: [ ] }",
      "dims: [ 2, 3 ] reshape { shape: [ 6 ] }",
    ]) {
      const { diagnostics } = await lint(io(`{ name: "X" data_type: TYPE_FP32 ${r} }`));
      expect(summary(diagnostics), r).toEqual([]);
    }
  });

  it("refuse an empty reshape without batching", async () => {
    const cfg = pythonConfig(
      "m",
      'input [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] reshape { } } ]\noutput [ { name: "O" data_type: TYPE_FP32 dims: [ 1 ] } ]\n',
      0,
    );
    expectOne(
      (await lint(cfg)).diagnostics,
      "reshape-empty",
      posOf(cfg, "reshape"),
      "has an empty reshape, which a non-batching model cannot use",
    );
  });

  it("NHWC and NCHW need three dims", async () => {
    const cfg = io('{ name: "X" data_type: TYPE_FP32 format: FORMAT_NHWC dims: [ 224, 224 ] }');
    expectOne(
      (await lint(cfg)).diagnostics,
      "io-format-dims",
      posOf(cfg, "format"),
      "has format FORMAT_NHWC, which needs exactly 3 dims",
    );
  });

  it("shape tensors and non-linear IO are TensorRT only", async () => {
    const a = io('{ name: "X" data_type: TYPE_INT32 dims: [ 1 ] is_shape_tensor: true }');
    expectOne(
      (await lint(a)).diagnostics,
      "shape-tensor-platform",
      posOf(a, "is_shape_tensor"),
      "only TensorRT models support",
    );
    const b = io('{ name: "X" data_type: TYPE_INT32 dims: [ 1 ] is_non_linear_format_io: true }');
    expectOne(
      (await lint(b)).diagnostics,
      "non-linear-io-platform",
      posOf(b, "is_non_linear_format_io"),
      "non-linear IO format",
    );
  });

  it("non-linear IO needs three dims on TensorRT", async () => {
    const cfg = `name: "m"\nplatform: "tensorrt_plan"\ninput [ { name: "X" data_type: TYPE_FP32 dims: [ 4 ] is_non_linear_format_io: true } ]\n`;
    expectOne(
      (await lint(cfg, { "m/1/model.plan": "x" })).diagnostics,
      "non-linear-io-dims",
      posOf(cfg, "is_non_linear_format_io"),
      "uses non-linear IO format, which needs 3 dims",
    );
  });

  it("warn about a name declared twice (Triton 2.51 loads it)", async () => {
    const cfg = io('{ name: "X" data_type: TYPE_FP32 dims: [ 1 ] }, { name: "X" data_type: TYPE_FP32 dims: [ 1 ] }');
    expectOne(
      (await lint(cfg)).diagnostics,
      "io-duplicate",
      posOf(cfg, '"X"', 0, 2),
      "input 'X' is declared twice (first at 4:9)",
      "warning",
    );
  });

  it("batch inputs and outputs name real tensors", async () => {
    const cfg = pythonConfig(
      "m",
      `${ECHO_IO}batch_input [ { kind: BATCH_ELEMENT_COUNT target_name: "N" data_type: TYPE_FP16 source_input: [ "INPUT9", "INPUT0" ] } ]
batch_output [ { target_name: [ "OUTPUT0", "OUTPUT0", "OUT9" ] source_input: "INPUT0" }, { target_name: "OUTPUT0" } ]
`,
    );
    const { diagnostics } = await lint(cfg);
    expectOne(
      diagnostics,
      "batch-input-source",
      posOf(cfg, "{ kind"),
      "batch_input 1 needs exactly 1 source_input, has 2",
    );
    expectOne(diagnostics, "batch-input-type", posOf(cfg, "{ kind"), "must be TYPE_INT32 or TYPE_FP32");
    expect(
      expectOne(
        diagnostics,
        "batch-input-unknown-source",
        posOf(cfg, '"INPUT9"'),
        "batch_input source 'INPUT9' is not an input of this model",
      ).hint,
    ).toBe("Did you mean 'INPUT0'?");
    expectOne(
      diagnostics,
      "batch-output-duplicate-target",
      posOf(cfg, '"OUTPUT0"', 0, 3),
      "batch_output target 'OUTPUT0' is listed twice",
    );
    expectOne(
      diagnostics,
      "batch-output-unknown-target",
      posOf(cfg, '"OUT9"'),
      "batch_output target 'OUT9' is not an output of this model",
    );
    expectOne(
      diagnostics,
      "batch-output-source",
      posOf(cfg, '{ target_name: "OUTPUT0"'),
      "batch_output 2 needs exactly 1 source_input, has 0",
    );
  });

  it("a batch output's source is one of the model's inputs", async () => {
    const cfg = pythonConfig("m", `${ECHO_IO}batch_output [ { target_name: "OUTPUT0" source_input: "INPUT7" } ]\n`);
    const found = expectOne(
      (await lint(cfg)).diagnostics,
      "batch-output-unknown-source",
      posOf(cfg, '"INPUT7"'),
      "batch_output source 'INPUT7' is not an input of this model",
    );
    expect(found.hint).toBe("Did you mean 'INPUT0'?");
  });
});

describe("dynamic batching", () => {
  const db = (body: string, mbs = 8) => pythonConfig("m", `${ECHO_IO}dynamic_batching {\n${body}\n}\n`, mbs);

  it("preferred sizes are positive and at most max_batch_size", async () => {
    const cfg = db("  preferred_batch_size: [ 4, 0, 16 ]");
    const { diagnostics } = await lint(cfg);
    expectOne(
      diagnostics,
      "preferred-batch-size-positive",
      posOf(cfg, "0,"),
      "preferred batch size 0 must be positive",
    );
    expectOne(
      diagnostics,
      "preferred-batch-size-too-large",
      posOf(cfg, "16 ]"),
      "preferred batch size 16 is larger than max_batch_size 8",
    );
  });

  it("a non-batching model takes no preferred sizes", async () => {
    const cfg = db("  preferred_batch_size: [ 2 ]", 0);
    expect(
      expectOne(
        (await lint(cfg)).diagnostics,
        "preferred-batch-size-too-large",
        posOf(cfg, "2 ]"),
        "larger than max_batch_size 0",
      ).hint,
    ).toContain("does not batch");
  });

  it("default_priority_level lies in 1..priority_levels", async () => {
    const over = db("  priority_levels: 2\n  default_priority_level: 3");
    expectOne(
      (await lint(over)).diagnostics,
      "default-priority-out-of-range",
      posOf(over, "3\n"),
      "default_priority_level 3 is outside 1..2",
    );
    const unset = db("  priority_levels: 2");
    expectOne(
      (await lint(unset)).diagnostics,
      "default-priority-out-of-range",
      posOf(unset, "priority_levels"),
      "priority_levels is 2 but default_priority_level is not set",
    );
  });

  it("priority_queue_policy keys lie in 1..priority_levels", async () => {
    const cfg = db(
      "  priority_levels: 2\n  default_priority_level: 1\n  priority_queue_policy { key: 5 value { max_queue_size: 4 } }",
    );
    expectOne(
      (await lint(cfg)).diagnostics,
      "priority-policy-out-of-range",
      posOf(cfg, "5 value"),
      "priority_queue_policy for level 5 is outside 1..2",
    );
  });

  it("priority settings without priority_levels do nothing", async () => {
    const cfg = db("  default_priority_level: 5");
    expectOne(
      (await lint(cfg)).diagnostics,
      "priority-ignored",
      posOf(cfg, "default_priority_level"),
      "has no effect without priority_levels",
      "warning",
    );
  });

  it("preserve_ordering allows one priority level and no DELAY", async () => {
    const levels = db("  preserve_ordering: true\n  priority_levels: 2\n  default_priority_level: 1");
    expectOne(
      (await lint(levels)).diagnostics,
      "preserve-ordering-priorities",
      posOf(levels, "preserve_ordering"),
      "preserve_ordering allows one priority level, but priority_levels is 2",
    );
    const delay = db(
      "  preserve_ordering: true\n  default_queue_policy { timeout_action: DELAY default_timeout_microseconds: 100 }",
    );
    expectOne(
      (await lint(delay)).diagnostics,
      "preserve-ordering-delay",
      posOf(delay, "DELAY"),
      "preserve_ordering cannot be combined with timeout_action DELAY",
    );
    const perLevel = db(
      "  preserve_ordering: true\n  priority_levels: 1\n  default_priority_level: 1\n  priority_queue_policy { key: 1 value { timeout_action: DELAY default_timeout_microseconds: 5 } }",
    );
    expectOne((await lint(perLevel)).diagnostics, "preserve-ordering-delay", posOf(perLevel, "DELAY"), "DELAY");
  });

  it("DELAY without a timeout never delays, so preserve_ordering allows it", async () => {
    const cfg = db("  preserve_ordering: true\n  default_queue_policy { timeout_action: DELAY }");
    expect(summary((await lint(cfg)).diagnostics)).toEqual([]);
  });

  it("says nothing more about preferred sizes when max_batch_size is itself wrong", async () => {
    // One bad value, one error: comparing 8 with -2 would only add errors hinting "Use sizes up to -2".
    const cfg = db("  preferred_batch_size: [ 8, 16, 0 ]", -2);
    const { diagnostics } = await lint(cfg);
    expect(diagnostics.map((d) => d.code)).toEqual(["max-batch-size-negative", "preferred-batch-size-positive"]);
    expect(diagnostics.map((d) => d.hint).join(" ")).not.toMatch(/-2/);
  });

  it("warns that a non-batching model forms no batches", async () => {
    const cfg = db("", 0);
    expectOne(
      (await lint(cfg)).diagnostics,
      "dynamic-batching-no-batch",
      posOf(cfg, "dynamic_batching"),
      "cannot form batches",
      "warning",
    );
  });
});

describe("sequence batching, caches and newer fields", () => {
  it("checks the oldest strategy's preferred sizes like dynamic batching's, and not against a negative max_batch_size", async () => {
    const seq = (mbs: number) =>
      pythonConfig(
        "m",
        `${ECHO_IO}sequence_batching { oldest { max_candidate_sequences: 4 preferred_batch_size: [ 2, 16 ] } }\n`,
        mbs,
      );
    const cfg = seq(4);
    const d = expectOne(
      (await lint(cfg)).diagnostics,
      "preferred-batch-size-too-large",
      posOf(cfg, "16 ]"),
      "preferred batch size 16 is larger than max_batch_size 4",
    );
    expect(d.hint).toBe("Use sizes up to 4, or raise max_batch_size.");
    expect((await lint(seq(0))).diagnostics.map((x) => x.hint)).toEqual(
      Array(2).fill("The model does not batch (max_batch_size 0): raise max_batch_size or drop preferred_batch_size."),
    );
    expect((await lint(seq(-3))).diagnostics.map((x) => x.code)).toEqual(["max-batch-size-negative"]);
  });

  it("checks sequence controls", async () => {
    const cfg = pythonConfig(
      "m",
      `${ECHO_IO}sequence_batching {
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0 ] } ] },
    { name: "START" control [ { kind: CONTROL_SEQUENCE_READY } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_FP32 } ] },
    { name: "END" control [ { kind: CONTROL_SEQUENCE_START bool_false_true: [ false, true ] } ] },
    { control [ { kind: CONTROL_SEQUENCE_END fp32_false_true: [ 0, 1 ] int32_false_true: [ 0, 1 ] } ] }
  ]
  direct { minimum_slot_utilization: 1.5 }
}
`,
    );
    const { diagnostics } = await lint(cfg);
    expect(diagnostics.filter((d) => d.code === "sequence-control-values").map((d) => d.message)).toEqual([
      "CONTROL_SEQUENCE_START false/true values need exactly 2 entries, has 1",
      "CONTROL_SEQUENCE_READY needs int32_false_true, fp32_false_true or bool_false_true",
      "CONTROL_SEQUENCE_END gives more than one of int32_false_true, fp32_false_true and bool_false_true",
    ]);
    expectOne(
      diagnostics,
      "sequence-control-kind-twice",
      posOf(cfg, "{ kind: CONTROL_SEQUENCE_START bool"),
      "CONTROL_SEQUENCE_START is given more than once",
    );
    expectOne(diagnostics, "sequence-control-name", posOf(cfg, "{ control"), "a sequence control input has no name");
    expectOne(
      diagnostics,
      "sequence-control-duplicate",
      posOf(cfg, '"START"', 0, 2),
      "control tensor 'START' is used for more than one control",
    );
    expectOne(
      diagnostics,
      "sequence-corrid-type",
      posOf(cfg, "{ kind: CONTROL_SEQUENCE_CORRID"),
      "CONTROL_SEQUENCE_CORRID has data_type TYPE_FP32",
    );
    expectOne(
      diagnostics,
      "sequence-slot-utilization",
      posOf(cfg, "1.5"),
      "minimum_slot_utilization 1.5 is outside 0..1",
    );
  });

  it("the response cache works with neither sequence batching nor decoupled models", async () => {
    const seq = pythonConfig("m", `${ECHO_IO}sequence_batching { }\nresponse_cache { enable: true }\n`);
    expectOne(
      (await lint(seq)).diagnostics,
      "response-cache-sequence",
      posOf(seq, "response_cache"),
      "does not support sequence batching",
    );
    const dec = pythonConfig(
      "m",
      `${ECHO_IO}model_transaction_policy { decoupled: true }\nresponse_cache { enable: true }\n`,
    );
    expectOne(
      (await lint(dec)).diagnostics,
      "response-cache-decoupled",
      posOf(dec, "response_cache"),
      "does not support decoupled models",
    );
  });

  it("refuses a field the local runtime's Triton 2.51 does not know", async () => {
    const cfg = pythonConfig(
      "m",
      `${ECHO_IO}model_metrics { metric_control [ { metric_identifier { family: "f" } histogram_options { buckets: [ 1 ] } } ] }\n`,
    );
    expectOne(
      (await lint(cfg, undefined, { ...lintFacts("local") })).diagnostics,
      "field-newer-than-runtime",
      posOf(cfg, "model_metrics"),
      "'model_metrics' is newer than Triton 2.51",
    );
    expect(summary((await lint(cfg, undefined, { ...lintFacts("docker") })).diagnostics)).toEqual([]);
  });

  it("model_metrics controls are complete", async () => {
    const cfg = pythonConfig("m", `${ECHO_IO}model_metrics { metric_control [ { metric_identifier { } } ] }\n`);
    const { diagnostics } = await lint(cfg);
    expectOne(
      diagnostics,
      "metrics-identifier",
      posOf(cfg, "metric_identifier"),
      "metric identifier has an empty family",
    );
    expectOne(
      diagnostics,
      "metrics-histogram",
      posOf(cfg, "{ metric_identifier"),
      "metric control has no histogram_options",
    );
  });

  it("warns about a map key given twice", async () => {
    const cfg = pythonConfig(
      "m",
      `${ECHO_IO}parameters { key: "a" value { string_value: "1" } }\nparameters { key: "a" value { string_value: "2" } }\n`,
    );
    expectOne(
      (await lint(cfg)).diagnostics,
      "map-duplicate-key",
      posOf(cfg, "parameters", 0, 2),
      "key 'a' is given twice in this map",
      "warning",
    );
  });
});

describe("instance groups", () => {
  const groups = (g: string) => pythonConfig("m", `${ECHO_IO}instance_group [ ${g} ]\n`);

  it("KIND_GPU without a GPU is a warning while linting", async () => {
    const cfg = groups("{ count: 2 kind: KIND_GPU }");
    const d = expectOne(
      (await lint(cfg, undefined, { gpuAvailable: false })).diagnostics,
      "gpu-unavailable",
      posOf(cfg, "KIND_GPU"),
      "instance group 1 asks for KIND_GPU, but this machine has no GPU",
      "warning",
    );
    expect(d.hint).toContain("KIND_CPU");
  });

  it("and an error when about to serve", async () => {
    const cfg = groups('{ name: "g" kind: KIND_GPU }');
    expectOne(
      (await lint(cfg, undefined, { gpuAvailable: false, gpuMissingSeverity: "error" })).diagnostics,
      "gpu-unavailable",
      posOf(cfg, "KIND_GPU"),
      "instance group 'g' asks for KIND_GPU",
    );
  });

  it("says nothing when it is not known whether there is a GPU, or there is one", async () => {
    const cfg = groups("{ kind: KIND_GPU gpus: [ 0 ] }");
    expect(summary((await lint(cfg)).diagnostics)).toEqual([]);
    expect(summary((await lint(cfg, undefined, { gpuAvailable: true })).diagnostics)).toEqual([]);
  });

  it("KIND_AUTO listing GPUs fails without a GPU (Triton makes it KIND_CPU)", async () => {
    const cfg = groups("{ kind: KIND_AUTO gpus: [ 0 ] }");
    expectOne(
      (await lint(cfg, undefined, { gpuAvailable: false })).diagnostics,
      "gpu-unavailable",
      posOf(cfg, "gpus"),
      "lists GPUs, but this machine has none",
      "warning",
    );
  });

  it("GPU ids must exist when the count is known", async () => {
    const cfg = groups("{ kind: KIND_GPU gpus: [ 0, 3 ] }");
    expectOne(
      (await lint(cfg, undefined, { gpuAvailable: true, gpuCount: 2 })).diagnostics,
      "gpu-id-invalid",
      posOf(cfg, "3 ]"),
      "names GPU 3, but this machine has 2 GPUs (0..1)",
    );
  });

  it("KIND_CPU and KIND_MODEL list no GPUs", async () => {
    const cfg = groups("{ kind: KIND_CPU gpus: [ 0 ] }, { kind: KIND_MODEL gpus: [ 0 ] }");
    const ds = (await lint(cfg)).diagnostics.filter((d) => d.code === "instance-gpus-not-gpu-kind");
    expect(ds.map((d) => [d.line, d.column, d.message])).toEqual([
      [posOf(cfg, "gpus").line, posOf(cfg, "gpus").column, "instance group 1 has kind KIND_CPU but lists GPUs"],
      [
        posOf(cfg, "gpus", 0, 2).line,
        posOf(cfg, "gpus", 0, 2).column,
        "instance group 2 has kind KIND_MODEL but lists GPUs",
      ],
    ]);
  });

  it("profiles are TensorRT only; a negative count falls back to 1", async () => {
    const cfg = groups('{ kind: KIND_CPU count: -2 profile: [ "0" ] }');
    const { diagnostics } = await lint(cfg);
    expectOne(
      diagnostics,
      "instance-profile-platform",
      posOf(cfg, "profile"),
      "sets profile, which only TensorRT models support",
    );
    expectOne(diagnostics, "instance-count-negative", posOf(cfg, "-2"), "has count -2", "warning");
  });
});

describe("version folders and model files", () => {
  it("needs a version folder", async () => {
    const { diagnostics, repo } = await lint(pythonConfig("m"), {});
    const d = expectOne(diagnostics, "version-missing", { line: 1, column: 1 }, "model 'm' has no version folder");
    expect(d.hint).toBe(`Create ${path.join("m", "1")}/ holding the model file.`);
    expect(d.file).toBe(path.join(repo, "m", "config.pbtxt"));
  });

  it("ignores folders that are not versions, with a warning on each", async () => {
    const { diagnostics, repo } = await lint(pythonConfig("m"), { "m/01/model.py": ECHO_MODEL_PY, "m/v2/": "" });
    expectOne(diagnostics, "version-missing", undefined, "has no version folder");
    const ignored = diagnostics.filter((d) => d.code === "version-dir-ignored");
    expect(ignored.map((d) => [d.file, d.severity, d.message, d.hint])).toEqual([
      [
        path.join(repo, "m", "01"),
        "warning",
        "folder '01' has a leading zero, so Triton ignores it as a version",
        "Rename it to '1'.",
      ],
      [
        path.join(repo, "m", "v2"),
        "warning",
        "folder 'v2' is not a number, so Triton ignores it as a version",
        expect.any(String),
      ],
    ]);
  });

  it("does not take warmup or initial_state for versions", async () => {
    const { diagnostics } = await lint(pythonConfig("m"), {
      "m/1/model.py": ECHO_MODEL_PY,
      "m/warmup/": "",
      "m/initial_state/": "",
    });
    expect(summary(diagnostics)).toEqual([]);
  });

  it("checks the model file of each version the policy loads", async () => {
    const cfg = pythonConfig("m");
    const { diagnostics } = await lint(cfg, { "m/1/model.py": ECHO_MODEL_PY, "m/2/": "" });
    expect(
      expectOne(
        diagnostics,
        "model-file-missing",
        posOf(cfg, '"python"'),
        `version 2 has no model.py (${path.join("m", "2", "model.py")})`,
      ).hint,
    ).toContain("class TritonPythonModel");
    const all = `${cfg}version_policy { all { } }\n`;
    expect(
      (await lint(all, { "m/1/": "", "m/2/model.py": ECHO_MODEL_PY })).diagnostics.filter(
        (d) => d.code === "model-file-missing",
      ),
    ).toHaveLength(1);
  });

  it("uses default_model_filename and the platform's file", async () => {
    const named = `${pythonConfig("m")}default_model_filename: "main.py"\n`;
    expectOne(
      (await lint(named)).diagnostics,
      "model-file-missing",
      posOf(named, '"main.py"'),
      "version 1 has no main.py",
    );
    const saved = `name: "m"\nplatform: "tensorflow_savedmodel"\n${ECHO_IO}`;
    expectOne(
      (await lint(saved, { "m/1/model.savedmodel": "not a folder" }, { ...lintFacts("docker") })).diagnostics,
      "model-file-kind",
      posOf(saved, '"tensorflow_savedmodel"'),
      "model.savedmodel must be a directory",
    );
  });

  it("version_policy specific names existing folders", async () => {
    const some = `${pythonConfig("m")}version_policy { specific { versions: [ 1, 3 ] } }\n`;
    expectOne(
      (await lint(some)).diagnostics,
      "version-specific-missing",
      posOf(some, "version_policy"),
      "version_policy names version 3, which has no folder",
      "warning",
    );
    const none = `${pythonConfig("m")}version_policy { specific { versions: [ 4 ] } }\n`;
    expectOne(
      (await lint(none)).diagnostics,
      "version-none-selected",
      posOf(none, "version_policy"),
      "no version folder matches the version_policy",
    );
  });

  it("model.py defines TritonPythonModel with execute", async () => {
    const noClass = await lint(pythonConfig("m"), { "m/1/model.py": "class Model:\n    pass\n" });
    const d = expectOne(
      noClass.diagnostics,
      "python-model-class",
      { line: 1, column: 1 },
      "model.py defines no class TritonPythonModel",
    );
    expect(d.file).toBe(path.join(noClass.repo, "m", "1", "model.py"));
    const noExecute = await lint(pythonConfig("m"), {
      "m/1/model.py": "class TritonPythonModel:\n    def initialize(self, args):\n        pass\n",
    });
    expectOne(
      noExecute.diagnostics,
      "python-model-execute",
      { line: 1, column: 1 },
      "TritonPythonModel has no execute method",
      "warning",
    );
  });

  it("a folder without config.pbtxt gets a warning", async () => {
    const { diagnostics, repo } = await lint(undefined, { "m/1/model.py": ECHO_MODEL_PY });
    const d = expectOne(
      diagnostics,
      "config-missing",
      { line: 1, column: 1 },
      "model 'm' has no config.pbtxt",
      "warning",
    );
    expect(d.file).toBe(path.join(repo, "m"));
    expect(d.hint).toContain("triton-dev init");
  });

  it("a syntax error stops at the parser, with its position", async () => {
    const cfg = `${pythonConfig("m")}dynamic_batching {\n`;
    const { diagnostics } = await lint(cfg);
    expect(summary(diagnostics)).toEqual([
      `error config-syntax@${posOf(cfg, "{\n").line}:${posOf(cfg, "{\n").column} '{' is never closed`,
    ]);
  });

  it("skips editor litter next to the model", async () => {
    const { result } = await lint(pythonConfig("m"), {
      "m/1/model.py": ECHO_MODEL_PY,
      ".git/": "",
      "__pycache__/": "",
      "m/1/__pycache__/": "",
    });
    expect(result.models.map((x) => x.name)).toEqual(["m"]);
    expect(summary(result.diagnostics)).toEqual([]);
  });

  it("follows symbolic links, and reports a dangling one as a link to nothing and the model file as missing", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { "src/model.py": ECHO_MODEL_PY, "m/config.pbtxt": pythonConfig("m"), "m/1/": "" });
    await fsp.symlink(path.join(repo, "src", "model.py"), path.join(repo, "m", "1", "model.py"));
    const linked = await lintRepository(repo);
    expect(summary(linked.models.find((m) => m.name === "m")!.diagnostics)).toEqual([]);
    await fsp.rm(path.join(repo, "src", "model.py"));
    const dangling = await lintRepository(repo);
    expect(dangling.models.find((m) => m.name === "m")?.diagnostics.map((d) => d.code)).toEqual([
      "model-files-dangling-link",
      "model-file-missing",
    ]);
  });
});

describe("the runtime field", () => {
  const withRuntime = (lib: string) => `${pythonConfig("m")}runtime: "${lib}"\n`;

  it("is an error when the library is in none of the folders Triton looks in, where the runtime fixes the backend's", async () => {
    const config = withRuntime("libtriton_nope.so");
    const { diagnostics } = await lint(config, undefined, { ...lintFacts("local") });
    expectOne(diagnostics, "runtime-missing", posOf(config, '"libtriton_nope.so"'), "runtime 'libtriton_nope.so'");
    // Where the image decides what the backend's folder holds, nothing is known to be missing.
    expect(summary((await lint(config, undefined, { ...lintFacts("docker") })).diagnostics)).toEqual([]);
  });

  it("finds a library the model folder holds, as Triton does", async () => {
    const config = withRuntime("libtriton_mine.so");
    const files = { "m/1/model.py": ECHO_MODEL_PY, "m/libtriton_mine.so": "" };
    expect(summary((await lint(config, files, { ...lintFacts("local") })).diagnostics)).toEqual([]);
  });

  it("takes a name that comes back into the backend's folder, and a leading '/', as Triton 2.51 does", async () => {
    for (const lib of ["../python/libtriton_python.so", "/libtriton_python.so"]) {
      const { diagnostics } = await lint(withRuntime(lib), undefined, { ...lintFacts("local") });
      expect(summary(diagnostics)).toEqual([]);
    }
  });

  it("refuses a name that leads out of the version folder it is found from", async () => {
    const config = withRuntime("../libtriton_python.so");
    const files = { "m/1/model.py": ECHO_MODEL_PY, "m/libtriton_python.so": "" };
    const { diagnostics } = await lint(config, files, { ...lintFacts("local") });
    expectOne(
      diagnostics,
      "runtime-escapes",
      posOf(config, '"../'),
      "runtime '../libtriton_python.so' leads from m/1 to m/libtriton_python.so",
    );
  });

  it("refuses a name that leads out of the backend's folder, whatever the runtime holds", async () => {
    const config = withRuntime("../python/..");
    for (const runtime of ["local", "docker"] as const) {
      const { diagnostics } = await lint(config, undefined, lintFacts(runtime));
      expectOne(
        diagnostics,
        "runtime-escapes",
        posOf(config, '"../'),
        "from the python backend's folder it leads out of it",
      );
    }
  });
});

describe("GPU ids", () => {
  it("refuses GPU -1 even when the number of GPUs is unknown", async () => {
    const config = `${pythonConfig("m")}instance_group [ { kind: KIND_GPU gpus: [ 0, -1 ] } ]\n`;
    const { diagnostics } = await lint(config);
    expectOne(diagnostics, "gpu-id-invalid", posOf(config, "0, -1", 3), "names GPU -1");
  });
});

describe("EXECUTION_ENV_PATH", () => {
  const withEnv = (value: string) =>
    `${pythonConfig("m")}parameters: { key: "EXECUTION_ENV_PATH" value: { string_value: "${value}" } }\n`;

  it("is an error when the path under $$TRITON_MODEL_DIRECTORY does not exist, at the value", async () => {
    const config = withEnv("$$TRITON_MODEL_DIRECTORY/python-3-11.tar.gz");
    const { diagnostics } = await lint(config);
    expectOne(
      diagnostics,
      "execution-env-missing",
      posOf(config, '"$$TRITON_MODEL_DIRECTORY/python-3-11.tar.gz"'),
      "EXECUTION_ENV_PATH '$$TRITON_MODEL_DIRECTORY/python-3-11.tar.gz' names",
    );
  });

  it("accepts an environment the model folder holds, a packed one or a folder", async () => {
    const packed = withEnv("$$TRITON_MODEL_DIRECTORY/env.tar.gz");
    expect(summary((await lint(packed, { "m/1/model.py": ECHO_MODEL_PY, "m/env.tar.gz": "" })).diagnostics)).toEqual(
      [],
    );
    const folder = withEnv("$$TRITON_MODEL_DIRECTORY/env");
    expect(
      summary((await lint(folder, { "m/1/model.py": ECHO_MODEL_PY, "m/env/bin/activate": "" })).diagnostics),
    ).toEqual([]);
  });

  it("checks an absolute path only where Triton runs on this machine, and refuses a relative one there (a warning for a container)", async () => {
    const absolute = withEnv("/nonexistent/triton-dev-env.tar.gz");
    const local = await lint(absolute, undefined, { ...lintFacts("local") });
    expect(local.diagnostics.map((d) => d.code)).toEqual(["execution-env-missing"]);
    expect(summary((await lint(absolute, undefined, { ...lintFacts("docker") })).diagnostics)).toEqual([]);
    // Plain lint agrees with `up` on this machine (the local runtime), saying how to lint for a container.
    const plain = await lint(absolute);
    expect(plain.diagnostics.map((d) => d.code)).toEqual(["execution-env-missing"]);
    expect(plain.diagnostics[0]!.hint).toContain("lint with --runtime docker");
    const relative = withEnv("env.tar.gz");
    // Where triton-dev starts tritonserver here (in its own run folder) a relative path is never
    // found: lint and up refuse it alike.
    for (const runtime of [undefined, "local"] as const) {
      const found = await lint(relative, undefined, runtime ? lintFacts(runtime) : {});
      expect(found.diagnostics.map((d) => [d.code, d.severity])).toEqual([["execution-env-relative", "error"]]);
      expect(found.diagnostics[0]!.message).toContain("Failed to get the canonical path");
    }
    const docker = await lint(relative, undefined, { ...lintFacts("docker") });
    expect(docker.diagnostics.map((d) => [d.code, d.severity])).toEqual([["execution-env-relative", "warning"]]);
  });
});
