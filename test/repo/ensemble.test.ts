import { afterAll, describe, expect, it } from "vitest";
import type { Diagnostic } from "../../src/repo/diagnostics.js";
import { findCycles } from "../../src/repo/rules/ensemble.js";
import { type LintOptions, lintModel, lintRepository } from "../../src/repo/lint.js";
import {
  ECHO_IO,
  ECHO_MODEL_PY,
  posOf,
  pythonConfig,
  pythonModel,
  summary,
  tempRepo,
  writeFiles,
  removeTempRepos,
} from "./helpers.js";
import { lintFacts } from "../../src/runtimes/kinds.js";

afterAll(removeTempRepos);

const TWO_IN = `input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] }, { name: "INPUT1" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
`;
const TWO_OUT = `input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] }, { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ -1 ] } ]
`;
const FIXED4 = `input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
`;

/** Composing models every ensemble below can use. */
const COMPOSING = {
  ...pythonModel("echo"),
  ...pythonModel("two_in", pythonConfig("two_in", TWO_IN)),
  ...pythonModel("two_out", pythonConfig("two_out", TWO_OUT)),
  ...pythonModel("fixed4", pythonConfig("fixed4", FIXED4)),
  ...pythonModel("echo_nobatch", pythonConfig("echo_nobatch", ECHO_IO.replaceAll("[ -1 ]", "[ -1, -1 ]"), 0)),
  ...pythonModel(
    "echo_opt",
    pythonConfig("echo_opt", TWO_IN.replace('name: "INPUT1"', 'name: "INPUT1" optional: true')),
  ),
};

const ENSEMBLE_IO = `input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] } ]
`;

function step(
  model: string,
  ins: Record<string, string>,
  outs: Record<string, string>,
  version = "model_version: -1 ",
): string {
  const maps = (kind: string, m: Record<string, string>) =>
    Object.entries(m)
      .map(([k, v]) => `${kind} { key: "${k}" value: "${v}" }`)
      .join(" ");
  return `    { model_name: "${model}" ${version}${maps("input_map", ins)} ${maps("output_map", outs)} }`;
}

function ensembleConfig(steps: string[], { io = ENSEMBLE_IO, mbs = 8, extra = "", name = "ens" } = {}): string {
  return `name: "${name}"\nplatform: "ensemble"\nmax_batch_size: ${mbs}\n${io}${extra}ensemble_scheduling {\n  step [\n${steps.join(",\n")}\n  ]\n}\n`;
}

async function lintEnsemble(config: string, more: Record<string, string> = {}, options: LintOptions = {}) {
  const repo = await tempRepo();
  await writeFiles(repo, { ...COMPOSING, "ens/config.pbtxt": config, "ens/1/": "", ...more });
  const result = await lintRepository(repo, options);
  return { repo, result, diagnostics: result.models.find((m) => m.name === "ens")?.diagnostics ?? [] };
}

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
  expect(d.hint ?? "", "says how to fix it").not.toBe("");
  return d;
}

describe("an ensemble that is right", () => {
  it("has no diagnostics", async () => {
    const { diagnostics, result } = await lintEnsemble(
      ensembleConfig([
        step("echo", { INPUT0: "IN" }, { OUTPUT0: "mid" }),
        step("echo", { INPUT0: "mid" }, { OUTPUT0: "OUT" }),
      ]),
    );
    expect(summary(result.diagnostics)).toEqual([]);
    expect(diagnostics).toEqual([]);
  });

  it("may feed one tensor to two inputs, skip an optional input and batch a non-batching model", async () => {
    const { result } = await lintEnsemble(
      ensembleConfig(
        [
          step("two_in", { INPUT0: "IN", INPUT1: "IN" }, { OUTPUT0: "a" }),
          step("echo_opt", { INPUT0: "a" }, { OUTPUT0: "OUT" }),
        ],
        { mbs: 4 },
      ),
    );
    expect(summary(result.diagnostics)).toEqual([]);
    // A batching ensemble's [-1] is [-1,-1] with the batch dimension, as the non-batching model says.
    const nobatch = await lintEnsemble(
      ensembleConfig([step("echo_nobatch", { INPUT0: "IN" }, { OUTPUT0: "OUT" })], { mbs: 4 }),
    );
    expect(summary(nobatch.result.diagnostics)).toEqual([]);
  });
});

describe("the ensemble's own graph", () => {
  it("takes no instance_group, optimization or model_warmup", async () => {
    const cfg = ensembleConfig([step("echo", { INPUT0: "IN" }, { OUTPUT0: "OUT" })], {
      extra:
        'instance_group [ { kind: KIND_CPU } ]\noptimization { graph { level: 1 } }\nmodel_warmup [ { name: "w" batch_size: 1 } ]\n',
    });
    const { diagnostics } = await lintEnsemble(cfg);
    expectOne(
      diagnostics,
      "ensemble-instance-group",
      posOf(cfg, "instance_group"),
      "an ensemble takes no instance_group",
    );
    expectOne(diagnostics, "ensemble-optimization", posOf(cfg, "optimization"), "an ensemble takes no optimization");
    expectOne(diagnostics, "ensemble-warmup", posOf(cfg, "model_warmup"), "an ensemble takes no model_warmup");
  });

  it("says once what to declare for an ensemble with steps but no input and no output, instead of every tensor", async () => {
    const cfg = ensembleConfig(
      [
        '    { model_name: "echo" model_version: -1 input_map { key: "INPUT0" value: "RAW" } output_map { key: "OUTPUT0" value: "mid" } }',
        '    { model_name: "echo" model_version: -1 input_map { key: "INPUT0" value: "mid" } output_map { key: "OUTPUT0" value: "SCORE" } }',
      ],
      { io: "" },
    );
    const { diagnostics } = await lintEnsemble(cfg);
    const d = expectOne(
      diagnostics,
      "ensemble-no-io",
      posOf(cfg, "ensemble_scheduling"),
      "the ensemble declares no input and no output: Triton needs both to know what a request carries and what it returns",
    );
    expect(d.hint).toContain("inputs for the tensors no step writes (RAW)");
    expect(d.hint).toContain("outputs for those no step reads (SCORE)");
    expect(diagnostics.filter((x) => x.severity === "error").map((x) => `${x.code}: ${x.message}`)).toEqual([
      d.code + ": " + d.message,
    ]);
  });

  it("needs steps, each complete", async () => {
    const none = ensembleConfig([]);
    expectOne(
      (await lintEnsemble(none)).diagnostics,
      "ensemble-no-steps",
      posOf(none, "ensemble_scheduling"),
      "the ensemble has no step",
    );
    const partial = ensembleConfig(['    { input_map { key: "INPUT0" value: "IN" } }']);
    const { diagnostics } = await lintEnsemble(partial);
    expectOne(diagnostics, "ensemble-step-model-missing", posOf(partial, "{ input_map"), "step 0 has no model_name");
    expectOne(
      diagnostics,
      "ensemble-step-output-map-missing",
      posOf(partial, "{ input_map"),
      "step 0 has no output_map",
    );
    const noInputs = ensembleConfig([
      '    { model_name: "echo" model_version: -1 output_map { key: "OUTPUT0" value: "OUT" } }',
    ]);
    expectOne(
      (await lintEnsemble(noInputs)).diagnostics,
      "ensemble-step-input-map-missing",
      posOf(noInputs, '{ model_name: "echo"'),
      "step 0 has no input_map",
    );
  });

  it("writes each tensor once", async () => {
    const cfg = ensembleConfig([
      step("echo", { INPUT0: "IN" }, { OUTPUT0: "OUT" }),
      step("echo", { INPUT0: "IN" }, { OUTPUT0: "OUT" }),
    ]);
    const d = expectOne(
      (await lintEnsemble(cfg)).diagnostics,
      "ensemble-tensor-written-twice",
      posOf(cfg, '"OUT" }', 0, 2),
      "ensemble tensor 'OUT' is written more than once (step 0 writes it too, at",
    );
    expect(d.message).toContain(`${posOf(cfg, '"OUT" }').line}:${posOf(cfg, '"OUT" }').column}`);
  });

  it("uses every input", async () => {
    const cfg = ensembleConfig([step("echo", { INPUT0: "IN" }, { OUTPUT0: "OUT" })], {
      io: ENSEMBLE_IO.replace("] }", '] }, { name: "EXTRA" data_type: TYPE_FP32 dims: [ -1 ] }'),
    });
    expectOne(
      (await lintEnsemble(cfg)).diagnostics,
      "ensemble-input-unused",
      posOf(cfg, '{ name: "EXTRA"'),
      "ensemble input 'EXTRA' is not used by any step",
    );
  });

  it("writes every output", async () => {
    const cfg = ensembleConfig([step("echo", { INPUT0: "IN" }, { OUTPUT0: "OUTT" })]);
    const { diagnostics } = await lintEnsemble(cfg);
    expect(
      expectOne(
        diagnostics,
        "ensemble-output-not-written",
        posOf(cfg, '{ name: "OUT"'),
        "ensemble output 'OUT' is not written by any step",
      ).hint,
    ).toContain("Did you mean 'OUTT'?");
  });

  it("names the tensor an unwritten output waits for", async () => {
    const cfg = ensembleConfig([step("two_in", { INPUT0: "IN", INPUT1: "ghost" }, { OUTPUT0: "OUT" })]);
    const { diagnostics } = await lintEnsemble(cfg);
    expectOne(
      diagnostics,
      "ensemble-output-not-written",
      posOf(cfg, '{ name: "OUT"'),
      "ensemble output 'OUT' can never be written: it depends on 'ghost', which nothing produces",
    );
    expectOne(
      diagnostics,
      "ensemble-tensor-not-produced",
      posOf(cfg, '"ghost"'),
      "step 0 reads ensemble tensor 'ghost', but no step writes it and it is not an ensemble input",
    );
  });

  it("leaves no intermediate tensor unused", async () => {
    const cfg = ensembleConfig([step("two_out", { INPUT0: "IN" }, { OUTPUT0: "OUT", OUTPUT1: "spare" })]);
    const d = expectOne(
      (await lintEnsemble(cfg)).diagnostics,
      "ensemble-tensor-unused",
      posOf(cfg, '"spare"'),
      "ensemble tensor 'spare' written by step 0 is never used",
    );
    expect(d.hint).toContain("mapping every model output is optional");
  });

  it("shows a cycle between tensors", async () => {
    const cfg = ensembleConfig([
      step("echo", { INPUT0: "b" }, { OUTPUT0: "a" }),
      step("two_in", { INPUT0: "a", INPUT1: "IN" }, { OUTPUT0: "b" }),
      step("echo", { INPUT0: "IN" }, { OUTPUT0: "OUT" }),
    ]);
    const { diagnostics } = await lintEnsemble(cfg);
    expect(
      expectOne(diagnostics, "ensemble-tensor-cycle", posOf(cfg, '"a" }'), "ensemble tensors form a cycle: a -> b -> a")
        .hint,
    ).toContain("Steps 0 and 1 feed each other");
    expect(diagnostics.filter((d) => d.code === "ensemble-tensor-unused")).toEqual([]);
  });

  it("warns when a step overwrites an ensemble input (Triton loads it)", async () => {
    const cfg = ensembleConfig([
      step("echo", { INPUT0: "IN" }, { OUTPUT0: "OUT" }),
      step("echo", { INPUT0: "OUT" }, { OUTPUT0: "IN" }),
    ]);
    const { diagnostics } = await lintEnsemble(cfg);
    expectOne(
      diagnostics,
      "ensemble-input-overwritten",
      posOf(cfg, '"IN" }', 0, 2),
      "step 1 writes 'IN', which is an ensemble input",
      "warning",
    );
    expect(diagnostics.filter((d) => d.severity === "error")).toEqual([]);
  });

  it("warns when an input is mapped twice (Triton keeps the last)", async () => {
    const cfg = ensembleConfig([
      '    { model_name: "echo" model_version: -1 input_map { key: "INPUT0" value: "IN" } input_map { key: "INPUT0" value: "OUT" } output_map { key: "OUTPUT0" value: "OUT" } }',
    ]);
    const { diagnostics } = await lintEnsemble(cfg);
    expectOne(
      diagnostics,
      "ensemble-map-duplicate-key",
      posOf(cfg, "input_map", 0, 2),
      "input 'INPUT0' of model 'echo' is mapped twice in step 0 (first at",
      "warning",
    );
  });
});

describe("the ensemble against the models it runs", () => {
  it("runs models that exist", async () => {
    const cfg = ensembleConfig([step("ecoh", { INPUT0: "IN" }, { OUTPUT0: "OUT" })]);
    expect(
      expectOne(
        (await lintEnsemble(cfg)).diagnostics,
        "ensemble-model-missing",
        posOf(cfg, '"ecoh"'),
        "step 0 runs model 'ecoh', which is not in the repository",
      ).hint,
    ).toBe("Did you mean 'echo'?");
  });

  it("runs models that load", async () => {
    const cfg = ensembleConfig([step("broken", { INPUT0: "IN" }, { OUTPUT0: "OUT" })]);
    const bad = await lintEnsemble(cfg, {
      "broken/config.pbtxt": 'name: "broken"\nbackend: "python"\ninput {',
      "broken/1/": "",
    });
    expectOne(
      bad.diagnostics,
      "ensemble-model-invalid",
      posOf(cfg, '"broken"'),
      "step 0 runs model 'broken', whose config.pbtxt has errors",
    );
    const wrong = await lintEnsemble(cfg, pythonModel("broken", pythonConfig("broken", ECHO_IO, -4)));
    expectOne(
      wrong.diagnostics,
      "ensemble-model-invalid",
      posOf(cfg, '"broken"'),
      "step 0 runs model 'broken', which has 1 error and will not load",
    );
  });

  it("asks for model_version -1, since an omitted version means version 0", async () => {
    const cfg = ensembleConfig([step("echo", { INPUT0: "IN" }, { OUTPUT0: "OUT" }, "")]);
    const d = expectOne(
      (await lintEnsemble(cfg)).diagnostics,
      "ensemble-model-version",
      posOf(cfg, '{ model_name: "echo"'),
      "step 0 has no model_version, so Triton requires version 0 of 'echo', which does not exist",
    );
    expect(d.hint).toBe("Write model_version: -1 to use the latest loaded version.");
    const v3 = ensembleConfig([step("echo", { INPUT0: "IN" }, { OUTPUT0: "OUT" }, "model_version: 3 ")]);
    expectOne(
      (await lintEnsemble(v3)).diagnostics,
      "ensemble-model-version",
      posOf(v3, "3 "),
      "step 0 wants version 3 of 'echo', which does not exist",
    );
    const v1 = ensembleConfig([step("echo", { INPUT0: "IN" }, { OUTPUT0: "OUT" }, "model_version: 1 ")]);
    expect(summary((await lintEnsemble(v1)).diagnostics)).toEqual([]);
  });

  it("fits the batch size of every model", async () => {
    const cfg = ensembleConfig([step("echo", { INPUT0: "IN" }, { OUTPUT0: "OUT" })], { mbs: 16 });
    const d = expectOne(
      (await lintEnsemble(cfg)).diagnostics,
      "ensemble-max-batch-size",
      posOf(cfg, '"echo"'),
      "the ensemble allows batches of 16, but step 0's model 'echo' allows only 8",
    );
    expect(d.hint).toBe("Lower the ensemble's max_batch_size to 8, or raise echo's.");
  });

  it("maps inputs and outputs the model has", async () => {
    const cfg = ensembleConfig([step("echo", { INPUTX: "IN" }, { OUTPUTX: "OUT" })]);
    const { diagnostics } = await lintEnsemble(cfg);
    expect(
      expectOne(diagnostics, "ensemble-unknown-input", posOf(cfg, '"INPUTX"'), "model 'echo' has no input 'INPUTX'")
        .hint,
    ).toBe("Did you mean 'INPUT0'?");
    expectOne(diagnostics, "ensemble-unknown-output", posOf(cfg, '"OUTPUTX"'), "model 'echo' has no output 'OUTPUTX'");
    expectOne(
      diagnostics,
      "ensemble-input-not-mapped",
      posOf(cfg, '{ model_name: "echo"'),
      "step 0 does not feed input 'INPUT0' of model 'echo'",
    );
  });

  it("feeds every required input", async () => {
    const cfg = ensembleConfig([step("two_in", { INPUT0: "IN" }, { OUTPUT0: "OUT" })]);
    const d = expectOne(
      (await lintEnsemble(cfg)).diagnostics,
      "ensemble-input-not-mapped",
      posOf(cfg, '{ model_name: "two_in"'),
      "step 0 does not feed input 'INPUT1' of model 'two_in'",
    );
    expect(d.hint).toBe(
      'Add input_map { key: "INPUT1" value: "<tensor>" } to step 0, or mark the input optional in two_in.',
    );
  });

  it("agrees on data types along each edge", async () => {
    const cfg = ensembleConfig([step("echo", { INPUT0: "IN" }, { OUTPUT0: "OUT" })], {
      io: ENSEMBLE_IO.replace("TYPE_FP32", "TYPE_INT32"),
    });
    expectOne(
      (await lintEnsemble(cfg)).diagnostics,
      "ensemble-type-mismatch",
      posOf(cfg, '"IN" }'),
      "ensemble tensor 'IN' is TYPE_FP32 in input 'INPUT0' of model 'echo' but TYPE_INT32 in ensemble input 'IN'",
    );
  });

  it("agrees on shapes along each edge, the batch dimension included", async () => {
    const cfg = ensembleConfig([step("fixed4", { INPUT0: "IN" }, { OUTPUT0: "OUT" })], {
      io: ENSEMBLE_IO.replace("[ -1 ]", "[ 3 ]"),
    });
    expectOne(
      (await lintEnsemble(cfg)).diagnostics,
      "ensemble-shape-mismatch",
      posOf(cfg, '"IN" }'),
      "ensemble tensor 'IN' has shape [-1,4] in input 'INPUT0' of model 'fixed4' but [-1,3] in ensemble input 'IN'",
    );
    const between = ensembleConfig(
      [step("echo", { INPUT0: "IN" }, { OUTPUT0: "mid" }), step("fixed4", { INPUT0: "mid" }, { OUTPUT0: "OUT" })],
      {
        io: ENSEMBLE_IO.replace("dims: [ -1 ] } ]\noutput", "dims: [ -1 ] } ]\noutput").replace(
          'name: "OUT" data_type: TYPE_FP32 dims: [ -1 ]',
          'name: "OUT" data_type: TYPE_FP32 dims: [ 4 ]',
        ),
      },
    );
    expect(summary((await lintEnsemble(between)).diagnostics)).toEqual([]);
  });

  it("has no cycle between ensembles", async () => {
    const a = ensembleConfig([step("ens_b", { IN: "IN" }, { OUT: "OUT" })], { name: "ens" });
    const b = ensembleConfig([step("ens", { IN: "IN" }, { OUT: "OUT" })], { name: "ens_b" });
    const { result } = await lintEnsemble(a, { "ens_b/config.pbtxt": b, "ens_b/1/": "" });
    const cyc = result.diagnostics.filter((d) => d.code === "ensemble-cycle");
    expect(cyc.map((d) => [d.model, d.message])).toEqual([
      ["ens", "ensembles run each other in a cycle: ens -> ens_b -> ens"],
      ["ens_b", "ensembles run each other in a cycle: ens -> ens_b -> ens"],
    ]);
    expect(result.diagnostics.filter((d) => d.code === "ensemble-model-invalid")).toEqual([]);
    const self = ensembleConfig([step("ens", { IN: "IN" }, { OUT: "OUT" })]);
    expectOne(
      (await lintEnsemble(self)).diagnostics,
      "ensemble-cycle",
      posOf(self, '"ens" model_version'),
      "ensemble 'ens' runs itself",
    );
  });

  it("passes a broken inner ensemble on to the outer one", async () => {
    const inner = ensembleConfig([step("echo", { INPUT0: "IN" }, { OUTPUT0: "OUT" })], { name: "inner", mbs: 16 });
    const outer = ensembleConfig([step("inner", { IN: "IN" }, { OUT: "OUT" })]);
    const { result, diagnostics } = await lintEnsemble(outer, { "inner/config.pbtxt": inner, "inner/1/": "" });
    expect(result.models.find((m) => m.name === "inner")?.diagnostics.map((d) => d.code)).toEqual([
      "ensemble-max-batch-size",
    ]);
    expectOne(
      diagnostics,
      "ensemble-model-invalid",
      posOf(outer, '"inner"'),
      "step 0 runs model 'inner', which has 1 error and will not load",
    );
  });

  it("says when the runtime cannot load a model it runs", async () => {
    const cfg = ensembleConfig([step("plan", { INPUT0: "IN" }, { OUTPUT0: "OUT" })]);
    const onnx = {
      "plan/config.pbtxt": `name: "plan"\nplatform: "tensorrt_plan"\nmax_batch_size: 8\n${ECHO_IO}`,
      "plan/1/model.plan": "engine",
    };
    const { diagnostics } = await lintEnsemble(cfg, onnx, { ...lintFacts("local") });
    expectOne(
      diagnostics,
      "ensemble-model-unavailable",
      posOf(cfg, '"plan"'),
      "step 0 runs 'plan', which needs the tensorrt backend, not in the local runtime, so this ensemble cannot load here either",
      "warning",
    );
  });

  it("counts an ensemble as not loading here when a model it runs needs a GPU, through nested ensembles", async () => {
    const gpu = {
      "gpu/config.pbtxt": `${pythonConfig("gpu")}instance_group [ { kind: KIND_GPU } ]\n`,
      "gpu/1/model.py": ECHO_MODEL_PY,
    };
    const inner = ensembleConfig([step("gpu", { INPUT0: "IN" }, { OUTPUT0: "OUT" })], { name: "inner" });
    const outer = ensembleConfig([step("inner", { IN: "IN" }, { OUT: "OUT" })]);
    const { result, diagnostics } = await lintEnsemble(
      outer,
      { ...gpu, "inner/config.pbtxt": inner, "inner/1/": "" },
      { gpuAvailable: false },
    );
    expectOne(
      diagnostics,
      "ensemble-model-unavailable",
      posOf(outer, '"inner"'),
      "step 0 runs 'inner', which runs 'gpu', which cannot load here, so this ensemble cannot load here either",
      "warning",
    );
    expect(result.errorCount).toBe(0);
    expect(
      result.models
        .filter((m) => ["ens", "gpu", "inner"].includes(m.name))
        .map((m) => [m.name, m.wouldLoad, m.unavailable]),
    ).toEqual([
      ["ens", false, "runs 'inner', which cannot load here"],
      ["gpu", false, "needs a GPU"],
      ["inner", false, "runs 'gpu', which cannot load here"],
    ]);
  });

  it("adds no unavailability warning when the model it runs has errors already", async () => {
    const gpu = {
      "gpu/config.pbtxt": `${pythonConfig("gpu", ECHO_IO, -1)}instance_group [ { kind: KIND_GPU } ]\n`,
      "gpu/1/model.py": ECHO_MODEL_PY,
    };
    const cfg = ensembleConfig([step("gpu", { INPUT0: "IN" }, { OUTPUT0: "OUT" })]);
    const { diagnostics } = await lintEnsemble(cfg, gpu, { gpuAvailable: false });
    expect(diagnostics.map((d) => d.code)).toEqual(["ensemble-model-invalid"]);
  });

  it("still needs a version folder", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, {
      ...COMPOSING,
      "ens/config.pbtxt": ensembleConfig([step("echo", { INPUT0: "IN" }, { OUTPUT0: "OUT" })]),
    });
    const d = (await lintRepository(repo)).models.find((m) => m.name === "ens")!.diagnostics;
    expect(d.map((x) => [x.code, x.hint])).toEqual([
      ["version-missing", "An ensemble still needs an (empty) version folder: create ens/1/."],
    ]);
  });
});

describe("long lists in messages", () => {
  it("names the first unmapped inputs and counts the rest, and skips unnamed ones", async () => {
    const inputs = Array.from({ length: 12 }, (_, i) => `{ name: "I${i}" data_type: TYPE_FP32 dims: [ -1 ] }`).join(
      ", ",
    );
    const wide = pythonConfig(
      "wide",
      `input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] }, { data_type: TYPE_FP32 dims: [ -1 ] }, ${inputs} ]\noutput [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]\n`,
    );
    const { diagnostics } = await lintEnsemble(
      ensembleConfig([step("wide", { INPUT0: "IN" }, { OUTPUT0: "OUT" })]),
      pythonModel("wide", wide),
    );
    expectOne(
      diagnostics,
      "ensemble-input-not-mapped",
      undefined,
      "step 0 does not feed inputs 'I0', 'I1', 'I2', 'I3', 'I4', 'I5', 'I6', 'I7' and 4 more of model 'wide'",
    );
  });
});

describe("one bad value, one error", () => {
  // A value that is already an error of its own must not come back as further errors along the
  // ensemble's edges, with hints built from the bad value.
  it("a composing model's negative max_batch_size is not compared with the ensemble's", async () => {
    const cfg = ensembleConfig([step("bad_mbs", { INPUT0: "IN" }, { OUTPUT0: "OUT" })], { mbs: 64 });
    const { result, diagnostics } = await lintEnsemble(
      cfg,
      pythonModel("bad_mbs", pythonConfig("bad_mbs", ECHO_IO, -3)),
    );
    expect(result.models.find((m) => m.name === "bad_mbs")!.diagnostics.map((d) => d.code)).toEqual([
      "max-batch-size-negative",
    ]);
    expect(diagnostics.map((d) => d.code)).toEqual(["ensemble-model-invalid"]);
    expect(diagnostics.map((d) => `${d.message} ${d.hint}`).join(" ")).not.toMatch(/-3/);
  });

  it("an ensemble's own negative max_batch_size is not compared with its models'", async () => {
    const { diagnostics } = await lintEnsemble(
      ensembleConfig([step("echo", { INPUT0: "IN" }, { OUTPUT0: "OUT" })], { mbs: -1 }),
    );
    expect(diagnostics.map((d) => d.code)).toEqual(["max-batch-size-negative"]);
  });

  it("tensors without a data_type or with invalid dims are not compared along the edges", async () => {
    const broken = pythonConfig(
      "broken",
      'input [ { name: "INPUT0" dims: [ -1 ] } ]\noutput [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 0 ] } ]\n',
    );
    const { result, diagnostics } = await lintEnsemble(
      ensembleConfig([step("broken", { INPUT0: "IN" }, { OUTPUT0: "OUT" })]),
      pythonModel("broken", broken),
    );
    expect(result.models.find((m) => m.name === "broken")!.diagnostics.map((d) => d.code)).toEqual([
      "io-data-type-missing",
      "dims-invalid",
    ]);
    expect(diagnostics.map((d) => d.code)).toEqual(["ensemble-model-invalid"]);
  });

  it("an ensemble's own broken input is one error, not also a mismatch or an unused input", async () => {
    const io =
      'input [ { name: "IN" dims: [ -1 ] }, { data_type: TYPE_FP32 dims: [ -1 ] } ]\noutput [ { name: "OUT" data_type: TYPE_FP32 dims: [ 0 ] } ]\n';
    const { diagnostics } = await lintEnsemble(
      ensembleConfig([step("echo", { INPUT0: "IN" }, { OUTPUT0: "OUT" })], { io }),
    );
    expect(diagnostics.map((d) => d.code).sort()).toEqual(["dims-invalid", "io-data-type-missing", "io-name-missing"]);
  });

  it("a model without any version folder is not also blamed for a missing version", async () => {
    const cfg = ensembleConfig([step("echo", { INPUT0: "IN" }, { OUTPUT0: "OUT" }, "model_version: 3 ")]);
    const { diagnostics } = await lintEnsemble(cfg, { "novers/config.pbtxt": pythonConfig("novers") });
    expect(diagnostics.map((d) => d.code)).toEqual(["ensemble-model-version"]);
    const cfg2 = ensembleConfig([step("novers", { INPUT0: "IN" }, { OUTPUT0: "OUT" }, "model_version: 3 ")]);
    const { diagnostics: d2 } = await lintEnsemble(cfg2, { "novers/config.pbtxt": pythonConfig("novers") });
    expect(d2.map((d) => d.code)).toEqual(["ensemble-model-invalid"]);
  });
});

describe("lintModel", () => {
  it("reports the model and the ensembles that run it, directly or not", async () => {
    const repo = await tempRepo();
    const inner = ensembleConfig([step("echo", { INPUT0: "IN" }, { OUTPUT0: "OUT" })], { name: "inner" });
    const outer = ensembleConfig([step("inner", { IN: "IN" }, { OUT: "OUT" })], { name: "outer" });
    await writeFiles(repo, {
      ...COMPOSING,
      "inner/config.pbtxt": inner,
      "inner/1/": "",
      "outer/config.pbtxt": outer,
      "outer/1/": "",
    });
    const r = await lintModel(repo, "echo");
    expect(r.models.map((m) => m.name)).toEqual(["echo", "inner", "outer"]);
    expect(r.errorCount).toBe(0);
    expect((await lintModel(repo, "two_in")).models.map((m) => m.name)).toEqual(["two_in"]);
  });

  it("after a model is deleted, reports the ensembles that lost it", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, {
      ...pythonModel("echo"),
      "ens/config.pbtxt": ensembleConfig([step("gone", { INPUT0: "IN" }, { OUTPUT0: "OUT" })]),
      "ens/1/": "",
    });
    const r = await lintModel(repo, "gone");
    expect(r.models.map((m) => m.name)).toEqual(["ens"]);
    expect(r.diagnostics.map((d) => d.code)).toEqual(["ensemble-model-missing"]);
    expect(r.errorCount).toBe(1);
  });

  it("reports a broken edit of a composing model on the ensemble too", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, {
      ...COMPOSING,
      "ens/config.pbtxt": ensembleConfig([step("echo", { INPUT0: "IN" }, { OUTPUT0: "OUT" })]),
      "ens/1/": "",
    });
    await writeFiles(repo, { "echo/config.pbtxt": pythonConfig("echo", ECHO_IO.replace('"INPUT0"', '"X"')) });
    const r = await lintModel(repo, "echo");
    expect(r.models.map((m) => [m.name, m.diagnostics.map((d) => d.code)])).toEqual([
      ["echo", []],
      ["ens", ["ensemble-input-not-mapped", "ensemble-unknown-input"]],
    ]);
  });
});

describe("findCycles", () => {
  it("finds each elementary cycle once, from its smallest member", () => {
    const g: Record<string, string[]> = { a: ["b"], b: ["c", "a"], c: ["b"], d: ["d"], e: [] };
    expect(findCycles(Object.keys(g), (n) => g[n] ?? [])).toEqual([["a", "b"], ["b", "c"], ["d"]]);
  });
});
