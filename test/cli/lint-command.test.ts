import fs from "node:fs";
import path from "node:path";
import { Command, CommanderError } from "commander";
import { afterAll, describe, expect, it } from "vitest";
import { detectNvidiaGpus, runLint } from "../../src/cli/lint-action.js";
import { registerLintCommand } from "../../src/cli/lint-command.js";
import type { CliContext, Output } from "../../src/cli/output.js";
import { UsageError } from "../../src/errors.js";
import { ruleTable } from "../../src/repo/rules.js";
import {
  ECHO_ONNX,
  ECHO_IO,
  ECHO_MODEL_PY,
  ROOT,
  SAMPLE_MODELS,
  posOf,
  pythonConfig,
  pythonModel,
  tempRepo,
  writeFiles,
  removeTempRepos,
} from "../repo/helpers.js";

afterAll(removeTempRepos);

function capture(): Output & { text: () => string } {
  const lines: string[] = [];
  return { out: (s) => void lines.push(s), err: (s) => void lines.push(s), text: () => lines.join("\n") };
}

const noGpu = async () => 0;
/** The end of the summary line: lint assumes Triton's auto-complete on, as `up` runs it. */
const AC = "; auto-complete on (assumed: Triton's default, as `up` runs it)";
const acFor = (runtime: string) => `; auto-complete on (assumed: as \`up --runtime ${runtime}\` runs Triton)`;

describe("runLint", () => {
  it("exits 0 on a clean repository and says so", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, pythonModel("a"));
    const out = capture();
    expect(await runLint(repo, {}, { output: out, detectGpus: noGpu })).toBe(0);
    expect(out.text()).toBe(`1 model checked: 0 errors, 0 warnings (1 of 1 would load)${AC}`);
  });

  it("exits 0 with warnings only", async () => {
    const repo = await tempRepo();
    const cfg = `${pythonConfig("a")}instance_group [ { kind: KIND_GPU } ]\n`;
    await writeFiles(repo, pythonModel("a", cfg));
    const out = capture();
    expect(await runLint(repo, {}, { output: out, detectGpus: noGpu, cwd: repo })).toBe(0);
    const at = posOf(cfg, "KIND_GPU");
    expect(out.text()).toContain(
      `a/config.pbtxt:${at.line}:${at.column}: warning: instance group 1 asks for KIND_GPU, but this machine has no GPU`,
    );
  });

  it("exits 1 on errors, compiler style, grouped per model, errors before warnings", async () => {
    const repo = await tempRepo();
    const cfg = `${pythonConfig("a")}instance_group [ { kind: KIND_GPU } ]\n`.replace(
      "max_batch_size: 8",
      "max_batch_size: -8",
    );
    const mbs = posOf(cfg, "-8");
    const gpu = posOf(cfg, "KIND_GPU");
    await writeFiles(repo, {
      ...pythonModel("a", cfg),
      ...pythonModel("b"),
      ...pythonModel("c", pythonConfig("other")),
    });
    const out = capture();
    expect(await runLint(repo, {}, { output: out, detectGpus: noGpu, cwd: path.dirname(repo) })).toBe(1);
    const base = path.basename(repo);
    expect(out.text()).toBe(
      [
        `a (${base}/a): 1 error, 1 warning`,
        `${base}/a/config.pbtxt:${mbs.line}:${mbs.column}: error: max_batch_size is -8; it must be 0 or more`,
        "  hint: Use 0 for a model that does not batch, or the largest batch the model accepts.",
        `${base}/a/config.pbtxt:${gpu.line}:${gpu.column}: warning: instance group 1 asks for KIND_GPU, but this machine has no GPU`,
        "  hint: Use kind: KIND_CPU to run here, or KIND_AUTO to use a GPU wherever there is one.",
        "",
        `c (${base}/c): 1 error`,
        `${base}/c/config.pbtxt:1:7: error: model name 'other' does not match its directory 'c'`,
        `  hint: Write name: "c" (or delete the name line), or rename the directory to 'other'.`,
        "",
        `3 models checked: 2 errors, 1 warning (1 of 3 would load)${AC}`,
      ].join("\n"),
    );
  });

  it("counts the sample repository's GPU model as not loading on a machine without a GPU, and still exits 0", async () => {
    const out = capture();
    expect(await runLint(SAMPLE_MODELS, {}, { output: out, detectGpus: noGpu, cwd: ROOT })).toBe(0);
    expect(out.text().split("\n").at(-1)).toBe(
      `8 models checked: 0 errors, 1 warning (7 of 8 would load here; resnet50_fp16 needs a GPU)${AC}`,
    );
    const withGpu = capture();
    expect(await runLint(SAMPLE_MODELS, {}, { output: withGpu, detectGpus: async () => 1, cwd: ROOT })).toBe(0);
    expect(withGpu.text()).toBe(`8 models checked: 0 errors, 0 warnings (8 of 8 would load)${AC}`);
  });

  it("counts a model whose backend the runtime lacks, and the ensembles running it, as not loading there", async () => {
    const repo = await tempRepo();
    const ens = `name: "ens"\nplatform: "ensemble"\nmax_batch_size: 8\n${ECHO_IO}ensemble_scheduling { step [ { model_name: "plan" model_version: -1 input_map { key: "INPUT0" value: "INPUT0" } output_map { key: "OUTPUT0" value: "OUTPUT0" } } ] }\n`;
    await writeFiles(repo, {
      ...pythonModel("a"),
      "plan/config.pbtxt": `name: "plan"\nplatform: "tensorrt_plan"\nmax_batch_size: 8\n${ECHO_IO}`,
      "plan/1/model.plan": "engine",
      "ens/config.pbtxt": ens,
      "ens/1/": "",
    });
    const out = capture();
    expect(await runLint(repo, { runtime: "local" }, { output: out, detectGpus: noGpu, cwd: repo })).toBe(0);
    expect(out.text()).toContain("plan/config.pbtxt:2:11: warning: backend 'tensorrt' is not in the local runtime");
    expect(out.text().split("\n").at(-1)).toBe(
      `3 models checked: 0 errors, 3 warnings (1 of 3 would load here; ens runs 'plan', which cannot load here; plan needs the tensorrt backend, not in the local runtime)${acFor("local")}`,
    );
    // The docker runtime's image has that backend.
    const docker = capture();
    expect(await runLint(repo, { runtime: "docker" }, { output: docker, detectGpus: noGpu })).toBe(0);
    expect(docker.text().split("\n").at(-1)).toBe(
      `3 models checked: 0 errors, 1 warning (3 of 3 would load)${acFor("docker")}`,
    );
    // No runtime named: it would load where its backend is, and the summary says the local runtime has none.
    const any = capture();
    expect(await runLint(repo, {}, { output: any, detectGpus: noGpu })).toBe(0);
    expect(any.text().split("\n").at(-1)).toBe(
      `3 models checked: 0 errors, 1 warning (3 of 3 would load on a runtime with their backends; the local runtime has none for plan (tensorrt: docker or kind runtime): --runtime checks one runtime)${AC}`,
    );
  });

  it("names three models that cannot load here and counts the rest", async () => {
    const repo = await tempRepo();
    for (const n of ["g1", "g2", "g3", "g4", "g5"])
      await writeFiles(repo, pythonModel(n, `${pythonConfig(n)}instance_group [ { kind: KIND_GPU } ]\n`));
    const out = capture();
    expect(await runLint(repo, {}, { output: out, detectGpus: noGpu })).toBe(0);
    expect(out.text().split("\n").at(-1)).toBe(
      `5 models checked: 0 errors, 5 warnings (0 of 5 would load here; g1 needs a GPU; g2 needs a GPU; g3 needs a GPU; 2 more cannot load here)${AC}`,
    );
  });

  it("refuses a folder without model directories, saying what one looks like", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { "notes.txt": "", "__pycache__/x.pyc": "" });
    const out = capture();
    expect(await runLint(repo, {}, { output: out, detectGpus: noGpu, cwd: path.dirname(repo) })).toBe(1);
    expect(out.text().split("\n")).toEqual([
      `${path.basename(repo)}:1:1: error: model repository '${path.basename(repo)}' holds no model directories`,
      `  hint: A model directory holds config.pbtxt and a numbered version folder (my_model/config.pbtxt, my_model/1/model.py): pass the folder that holds such directories, or scaffold one with \`triton-dev init ${repo}\`.`,
      "",
      `0 models checked: 1 error, 0 warnings${AC}`,
    ]);
    const json = capture();
    expect(await runLint(repo, { json: true }, { output: json, detectGpus: noGpu })).toBe(1);
    expect(JSON.parse(json.text())).toMatchObject({
      errorCount: 1,
      models: [],
      repositoryDiagnostics: [{ code: "repository-empty", severity: "error" }],
    });
  });

  it("prints JSON with --json", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, {
      ...pythonModel("a", 'name: "a"\nbackend: "python"\ninput [ { name: "x" dims: [ 1 ] } ]\n'),
    });
    const out = capture();
    expect(await runLint(repo, { json: true, runtime: "local" }, { output: out, detectGpus: noGpu })).toBe(1);
    const json = JSON.parse(out.text());
    expect(json).toMatchObject({
      repository: repo,
      errorCount: 1,
      warningCount: 0,
      repositoryDiagnostics: [],
      models: [{ name: "a", wouldLoad: false }],
    });
    expect(json.models[0]).not.toHaveProperty("unavailable");
    expect(json.models[0].diagnostics[0]).toMatchObject({
      severity: "error",
      code: "io-data-type-missing",
      line: 3,
      column: 9,
      file: path.join(repo, "a", "config.pbtxt"),
      model: "a",
    });
  });

  it("takes --gpu/--no-gpu over what the machine says", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, pythonModel("a", `${pythonConfig("a")}instance_group [ { kind: KIND_GPU } ]\n`));
    const out = capture();
    await runLint(repo, { gpu: true }, { output: out, detectGpus: noGpu });
    expect(out.text()).toBe(`1 model checked: 0 errors, 0 warnings (1 of 1 would load)${AC}`);
    const json = capture();
    await runLint(repo, { gpu: false, json: true }, { output: json, detectGpus: async () => 1 });
    expect(JSON.parse(json.text()).models[0]).toMatchObject({
      name: "a",
      wouldLoad: false,
      unavailable: "needs a GPU",
    });
  });

  it.each([
    ["a missing folder", (repo: string) => path.join(repo, "nope"), "does not exist"],
    ["a file", (repo: string) => path.join(repo, "a", "config.pbtxt"), "is not a folder"],
    ["a model folder", (repo: string) => path.join(repo, "a"), "is a model, not a model repository"],
  ])("refuses %s with a usage error", async (_label, target, message) => {
    const repo = await tempRepo();
    await writeFiles(repo, pythonModel("a"));
    const run = runLint(target(repo), {}, { output: capture(), detectGpus: noGpu });
    await expect(run).rejects.toBeInstanceOf(UsageError);
    await expect(runLint(target(repo), {}, { output: capture(), detectGpus: noGpu })).rejects.toThrow(message);
  });
});

describe("registerLintCommand", () => {
  let ctx: CliContext;

  function program(out: Output): Command {
    ctx = { output: out, env: process.env, exitCode: 0 };
    const p = new Command("triton-dev")
      .exitOverride()
      .configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
    registerLintCommand(p, ctx, { detectGpus: noGpu })
      .exitOverride()
      .configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
    return p;
  }

  it("sets the exit code from the result", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { ...pythonModel("a"), "b/config.pbtxt": "name: {", "b/1/model.py": ECHO_MODEL_PY });
    const out = capture();
    await program(out).parseAsync(["lint", repo, "--runtime", "local"], { from: "user" });
    expect(ctx.exitCode).toBe(1);
    expect(out.text()).toContain("error: '{' is never closed");
  });

  it("lints as Triton runs with --disable-auto-complete-config: a model without config.pbtxt is refused, and the summary says so", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { ...pythonModel("a"), "b/1/model.py": ECHO_MODEL_PY });
    const on = capture();
    await program(on).parseAsync(["lint", repo], { from: "user" });
    expect(ctx.exitCode).toBe(0);
    expect(on.text()).toContain("warning: model 'b' has no config.pbtxt");
    const off = capture();
    await program(off).parseAsync(["lint", repo, "--disable-auto-complete-config"], { from: "user" });
    expect(ctx.exitCode).toBe(1);
    expect(off.text()).toContain("error: model 'b' has no config.pbtxt, and Triton runs with config auto-complete off");
    expect(off.text().split("\n").at(-1)).toBe(
      "2 models checked: 1 error, 0 warnings (1 of 2 would load); auto-complete off (--disable-auto-complete-config)",
    );
  });

  it("rejects an unknown runtime as a usage error", async () => {
    await expect(
      program(capture()).parseAsync(["lint", ".", "--runtime", "moon"], { from: "user" }),
    ).rejects.toBeInstanceOf(CommanderError);
  });
});

describe("detectNvidiaGpus", () => {
  it.skipIf(process.platform !== "linux")(
    "counts the GPUs the driver lists, and says nothing when it cannot tell",
    async () => {
      const dir = await tempRepo();
      const procDir = path.join(dir, "gpus");
      expect(await detectNvidiaGpus(procDir, path.join(dir, "nvidiactl"))).toBe(0);
      fs.writeFileSync(path.join(dir, "nvidiactl"), "");
      expect(await detectNvidiaGpus(procDir, path.join(dir, "nvidiactl"))).toBeUndefined();
      fs.mkdirSync(path.join(procDir, "0000:00:06.0"), { recursive: true });
      expect(await detectNvidiaGpus(procDir)).toBe(1);
    },
  );
});

it("checks GPU ids against the GPUs found", async () => {
  const repo = await tempRepo();
  await writeFiles(repo, pythonModel("a", `${pythonConfig("a")}instance_group [ { kind: KIND_GPU gpus: [ 1 ] } ]\n`));
  const out = capture();
  expect(await runLint(repo, {}, { output: out, detectGpus: async () => 1 })).toBe(1);
  expect(out.text()).toContain("names GPU 1, but this machine has 1 GPU (0..0)");
});

describe("lint --explain", () => {
  it("prints a model's config as Triton completes it from its ONNX file, saying auto-complete was assumed on", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, {
      ...pythonModel("a"),
      "onnx/config.pbtxt": 'name: "onnx"\nplatform: "onnxruntime_onnx"\n',
      "onnx/1/model.onnx": ECHO_ONNX,
    });
    const out = capture();
    expect(await runLint(repo, { explain: "onnx" }, { output: out, detectGpus: noGpu, cwd: repo })).toBe(0);
    const text = out.text();
    expect(text).toContain("with auto-complete on (assumed: Triton's default");
    expect(text).toContain(`from ${path.join("onnx", "1", "model.onnx")}:`);
    const json = JSON.parse(text.slice(text.indexOf("{"), text.lastIndexOf("}") + 1)) as Record<string, unknown>;
    expect(json).toEqual({
      name: "onnx",
      platform: "onnxruntime_onnx",
      max_batch_size: 4,
      input: [{ name: "INPUT0", data_type: "TYPE_FP32", dims: [-1] }],
      output: [{ name: "OUTPUT0", data_type: "TYPE_FP32", dims: [-1] }],
    });
    expect(text).toContain("Filled in from the model file: max_batch_size 4");
  });

  it("refuses a model the repository does not hold, naming those it does", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, pythonModel("a"));
    const err = await runLint(repo, { explain: "b" }, { output: capture(), detectGpus: noGpu }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).hint).toContain("Pass one of its models: a.");
  });
});

describe("lint --list-rules", () => {
  it("lists every code of the rule table with its severity, area, commands and meaning, one line each, and checks nothing", async () => {
    const out = capture();
    // The repository argument is not looked at: this one does not exist.
    expect(await runLint("no-such-folder", { listRules: true }, { output: out })).toBe(0);
    const lines = out.text().split("\n");
    const rows = ruleTable();
    expect(lines[0]).toMatch(/^CODE +SEVERITY +AREA +REPORTED BY +MEANING$/);
    expect(lines.at(-1)).toBe(`${rows.length} codes`);
    expect(lines.slice(1, -1)).toHaveLength(rows.length);
    expect(lines).toContainEqual(
      expect.stringMatching(/^io-duplicate +warning +io +lint,up,lsp +two inputs or two outputs of one name$/),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(/^gpu-unavailable +error or warning +instances +lint,up,lsp +a KIND_GPU/),
    );
    // Codes raised outside lint are listed too, with the command that reports them.
    expect(lines).toContainEqual(expect.stringMatching(/^staging-no-space +error +staging +up,status +no space/));
    expect(lines).toContainEqual(expect.stringMatching(/^triton-load-failed +error +editor +lsp +the running Triton/));
    expect(lines).toContainEqual(
      expect.stringMatching(/^requirements-install-failed +error +serving +up,status +pip could not install/),
    );
  });

  it("gives the rows as JSON with --json", async () => {
    const out = capture();
    expect(await runLint("models", { listRules: true, json: true }, { output: out })).toBe(0);
    const rows = JSON.parse(out.text()) as Array<{ code: string; severity: string; area: string; description: string }>;
    expect(rows).toEqual(ruleTable());
    expect(rows.find((r) => r.code === "config-syntax")).toEqual({
      code: "config-syntax",
      severity: "error",
      area: "config",
      commands: ["lint", "up", "lsp"],
      description: "config.pbtxt is not valid protobuf text",
    });
  });

  it("is an option of the lint command", async () => {
    const out = capture();
    const program = new Command().exitOverride();
    const ctx: CliContext = { output: out, env: {}, exitCode: 0 };
    registerLintCommand(program, ctx);
    await program.parseAsync(["node", "triton-dev", "lint", "--list-rules"]);
    expect(ctx.exitCode).toBe(0);
    expect(out.text()).toContain("config-unknown-field");
  });
});
