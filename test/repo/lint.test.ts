import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { UserError } from "../../src/errors.js";
import { type LintOptions, type LintResult, lintRepository } from "../../src/repo/lint.js";
import {
  ARTICLE_FIXTURES,
  ECHO_IO,
  ECHO_MODEL_PY,
  SAMPLE_MODELS,
  pythonConfig,
  pythonModel,
  summary,
  tempRepo,
  writeFiles,
  removeTempRepos,
} from "./helpers.js";
import { MODEL_FILE_LIMITS } from "../../src/repo/model-files.js";
import { lintFacts } from "../../src/runtimes/kinds.js";

afterAll(removeTempRepos);

describe("the sample repository (models/)", () => {
  it.each([
    ["with no options", {}, []],
    // The GPU sample model is the one finding without a GPU, and only a warning.
    [
      "for the local runtime on a machine without a GPU",
      { ...lintFacts("local"), gpuAvailable: false },
      ["warning gpu-unavailable@32:11 instance group 1 asks for KIND_GPU, but this machine has no GPU"],
    ],
    ["for docker on a GPU machine", { ...lintFacts("docker"), gpuAvailable: true, gpuCount: 1 }, []],
  ])("lints clean %s", async (_label, options, expected) => {
    expect(fs.existsSync(SAMPLE_MODELS)).toBe(true);
    const r = await lintRepository(SAMPLE_MODELS, options);
    expect(summary(r.diagnostics)).toEqual(expected);
    expect(r.errorCount).toBe(0);
    expect(r.models.map((m) => m.name)).toEqual(
      expect.arrayContaining([
        "bert_tokenizer",
        "image_classifier",
        "resnet50_fp16",
        "sentiment_classifier",
        "sentiment_pipeline",
        "text_streamer",
      ]),
    );
    // `up` skips the GPU model on a machine without one: it does not load here, though no error says so.
    const gpuless = "gpuAvailable" in options && options.gpuAvailable === false;
    expect(r.models.filter((m) => !m.wouldLoad).map((m) => [m.name, m.unavailable])).toEqual(
      gpuless ? [["resnet50_fp16", "needs a GPU"]] : [],
    );
    for (const m of r.models) {
      expect(m.config?.name).toBe(m.name);
      expect(m.dir).toBe(path.join(SAMPLE_MODELS, m.name));
    }
  });

  it("gives the pipeline's config in Triton's JSON form", async () => {
    const r = await lintRepository(SAMPLE_MODELS);
    const pipeline = r.models.find((m) => m.name === "sentiment_pipeline")!;
    expect(pipeline.config?.platform).toBe("ensemble");
    expect(pipeline.config?.ensemble_scheduling?.step?.map((s) => [s.model_name, s.model_version])).toEqual([
      ["bert_tokenizer", -1],
      ["sentiment_classifier", -1],
    ]);
  });
});

describe("the article's configs as a repository", () => {
  /** resnet50_fp16, bert_large, bert_tokenizer and sentiment_pipeline exactly as the article writes them. */
  async function articleRepo(): Promise<string> {
    const repo = await tempRepo();
    const copy = async (fixture: string, model: string) => {
      await fsp.mkdir(path.join(repo, model, "1"), { recursive: true });
      await fsp.copyFile(path.join(ARTICLE_FIXTURES, fixture), path.join(repo, model, "config.pbtxt"));
    };
    await copy("resnet50_fp16-dynamic-batching.pbtxt", "resnet50_fp16");
    await copy("bert_large.pbtxt", "bert_large");
    await copy("bert_tokenizer.pbtxt", "bert_tokenizer");
    await copy("sentiment_pipeline.pbtxt", "sentiment_pipeline");
    await writeFiles(repo, { "bert_tokenizer/1/model.py": ECHO_MODEL_PY, "resnet50_fp16/1/model.plan": "plan" });
    return repo;
  }

  it("reports what Triton would refuse, and why", async () => {
    const repo = await articleRepo();
    const r = await lintRepository(repo, { ...lintFacts("local"), gpuAvailable: false });
    const by = (m: string) =>
      r.models.find((x) => x.name === m)!.diagnostics.map((d) => `${d.severity} ${d.code}@${d.line}:${d.column}`);
    expect(by("bert_large")).toEqual(["error platform-unknown@2:11", "warning gpu-unavailable@9:11"]);
    // A TensorRT plan cannot be read without TensorRT: said, so lint never passes it as checked.
    expect(by("resnet50_fp16")).toEqual(["warning backend-unavailable@2:11", "warning model-file-not-checked@2:11"]);
    expect(by("bert_tokenizer")).toEqual([]);
    // The article's pipeline maps tensors the article's tokenizer config never declares ("# ... input/output ..."),
    // and runs bert_large (max 32) in an ensemble allowing 128.
    expect(by("sentiment_pipeline")).toEqual(
      expect.arrayContaining([
        "error ensemble-max-batch-size@42:19",
        "error ensemble-model-invalid@42:19",
        "error ensemble-unknown-input@27:14",
      ]),
    );
    expect(r.errorCount).toBe(r.diagnostics.filter((d) => d.severity === "error").length);
    expect(r.warningCount).toBe(3);
  });
});

describe("lintRepository", () => {
  it("lists errors before warnings, each in file order", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, {
      ...pythonModel(
        "a",
        'name: "a"\nbackend: "python"\nmax_batch_size: -1\ninstance_group [ { kind: KIND_GPU } ]\ninput [ { name: "I" data_type: TYPE_FP32 dims: [ 0 ] } ]\n',
      ),
      ...pythonModel("b", 'name: "x"\nbackend: "python"\n'),
    });
    const r = await lintRepository(repo, { gpuAvailable: false });
    expect(r.diagnostics.map((d) => `${d.model} ${d.severity} ${d.code}`)).toEqual([
      "a error max-batch-size-negative",
      "a error dims-invalid",
      "b error name-mismatch",
      "a warning gpu-unavailable",
    ]);
    expect(r.models.find((m) => m.name === "a")!.diagnostics.map((d) => d.code)).toEqual([
      "max-batch-size-negative",
      "dims-invalid",
      "gpu-unavailable",
    ]);
    expect([r.errorCount, r.warningCount]).toEqual([3, 1]);
  });

  it("leaves out the config of a model whose config.pbtxt does not parse", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { ...pythonModel("a", "name: {") });
    const r = await lintRepository(repo);
    expect(r.models[0]).toMatchObject({ name: "a", diagnostics: [expect.objectContaining({ code: "config-syntax" })] });
    expect(r.models[0]!.config).toBeUndefined();
  });

  it("takes only folders, and not editor or VCS litter, for models", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, {
      ...pythonModel("a"),
      "README.md": "# models",
      ".git/HEAD": "ref",
      "__pycache__/x.pyc": "",
    });
    expect((await lintRepository(repo)).models.map((m) => m.name)).toEqual(["a"]);
  });

  it("refuses a repository without model directories, saying what one looks like", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { "README.md": "# models", ".git/HEAD": "ref" });
    const r = await lintRepository(repo);
    const d = {
      severity: "error",
      code: "repository-empty",
      file: repo,
      line: 1,
      column: 1,
      message: `model repository '${path.basename(repo)}' holds no model directories`,
    };
    expect(r).toMatchObject({
      models: [],
      repositoryDiagnostics: [d],
      diagnostics: [d],
      errorCount: 1,
      warningCount: 0,
    });
    expect(r.diagnostics[0]!.hint).toContain("my_model/config.pbtxt, my_model/1/model.py");
    expect(r.diagnostics[0]!.hint).toContain(`triton-dev init ${repo}`);
  });

  it("tells the models that would load here from those this machine or runtime cannot load", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, {
      ...pythonModel("py"),
      ...pythonModel("gpu", `${pythonConfig("gpu")}instance_group [ { kind: KIND_GPU } ]\n`),
      "plan/config.pbtxt": 'name: "plan"\nplatform: "tensorrt_plan"\nmax_batch_size: 8\n',
      "plan/1/model.plan": "engine",
      ...pythonModel("broken", pythonConfig("broken", ECHO_IO, -1)),
    });
    const verdicts = async (options: LintOptions) =>
      (await lintRepository(repo, options)).models.map(
        (m) => `${m.name}: ${m.wouldLoad ? "loads" : "does not load"}${m.unavailable ? `, ${m.unavailable}` : ""}`,
      );
    expect(await verdicts({ ...lintFacts("local"), gpuAvailable: false })).toEqual([
      "broken: does not load",
      "gpu: does not load, needs a GPU",
      "plan: does not load, needs the tensorrt backend, not in the local runtime",
      "py: loads",
    ]);
    // Where nothing is known of the machine or runtime, nothing stops them.
    expect(await verdicts({})).toEqual(["broken: does not load", "gpu: loads", "plan: loads", "py: loads"]);
    // At `up` a missing GPU is an error: the model does not load, and not for a "here" reason.
    expect(await verdicts({ ...lintFacts("docker"), gpuAvailable: false, gpuMissingSeverity: "error" })).toEqual([
      "broken: does not load",
      "gpu: does not load",
      "plan: loads",
      "py: loads",
    ]);
    // An image that has only the python backend: the verdict names the image, which decides.
    expect(await verdicts({ ...lintFacts("docker", "my/triton:1", ["python"]), gpuAvailable: true })).toEqual([
      "broken: does not load",
      "gpu: loads",
      "plan: does not load, needs the tensorrt backend, not in the docker runtime's image my/triton:1",
      "py: loads",
    ]);
  });

  it("throws UserError for a folder it cannot read", async () => {
    await expect(lintRepository(path.join(await tempRepo(), "missing"))).rejects.toBeInstanceOf(UserError);
  });
});

describe("config files that are not files", () => {
  it("refuses a FIFO, a device and a dangling link as config.pbtxt without reading them, each with its fix", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { ...pythonModel("fifo"), ...pythonModel("zero"), ...pythonModel("dangling") });
    for (const m of ["fifo", "zero", "dangling"]) await fsp.rm(path.join(repo, m, "config.pbtxt"));
    const { execFileSync } = await import("node:child_process");
    execFileSync("mkfifo", [path.join(repo, "fifo", "config.pbtxt")]);
    await fsp.symlink("/dev/zero", path.join(repo, "zero", "config.pbtxt"));
    await fsp.symlink(path.join(repo, "nowhere.pbtxt"), path.join(repo, "dangling", "config.pbtxt"));
    const t0 = Date.now();
    const r = await lintRepository(repo);
    expect(Date.now() - t0).toBeLessThan(5_000);
    const byModel = (m: string) => r.diagnostics.filter((d) => d.model === m || d.file.includes(`/${m}/`));
    expect(byModel("fifo").map((d) => [d.code, d.message, d.hint])).toContainEqual([
      "config-unreadable",
      "cannot read config.pbtxt: it is a FIFO, not a file",
      "Replace it with a regular text file.",
    ]);
    expect(byModel("zero").map((d) => d.message)).toContain("cannot read config.pbtxt: it is a device, not a file");
    expect(byModel("dangling").map((d) => d.message)).toContain(
      "cannot read config.pbtxt: it is a symbolic link to nothing",
    );
    expect(r.errorCount).toBe(3);
  });
});

describe("the model-file rule (repo/model-files.ts) in lint", () => {
  it("refuses links to folders outside the model, back into it or to nothing, and special files, each on its own file", async () => {
    const repo = await tempRepo();
    const outside = await tempRepo();
    await writeFiles(outside, { "weights.bin": "w", "tree/x.txt": "x" });
    await writeFiles(repo, { ...pythonModel("bad"), ...pythonModel("fine") });
    const v = path.join(repo, "bad", "1");
    await fsp.symlink(path.join(outside, "tree"), path.join(v, "tree"));
    await fsp.symlink("..", path.join(v, "up"));
    await fsp.symlink(path.join(outside, "gone"), path.join(v, "gone"));
    await fsp.symlink("/dev/zero", path.join(v, "zero"));
    const { execFileSync } = await import("node:child_process");
    execFileSync("mkfifo", [path.join(v, "pipe")]);
    // A link to a file outside the model (weights kept elsewhere) is fine.
    await fsp.symlink(path.join(outside, "weights.bin"), path.join(repo, "fine", "1", "weights.bin"));
    const r = await lintRepository(repo);
    const bad = r.models.find((m) => m.name === "bad")!;
    expect(bad.wouldLoad).toBe(false);
    expect(bad.diagnostics.filter((d) => d.severity === "error").map((d) => [d.code, d.file])).toEqual(
      expect.arrayContaining([
        ["model-files-dangling-link", path.join(v, "gone")],
        ["model-files-special-file", path.join(v, "pipe")],
        ["model-files-link-outside", path.join(v, "tree")],
        ["model-files-link-loop", path.join(v, "up")],
        ["model-files-special-file", path.join(v, "zero")],
      ]),
    );
    expect(r.models.find((m) => m.name === "fine")!.diagnostics).toEqual([]);
  });

  it("refuses a model over the rule's limits (depth, entries, bytes) and a link it cannot read, each with its code", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, {
      ...pythonModel("deep"),
      ...pythonModel("many"),
      ...pythonModel("large"),
      ...pythonModel("unreadable"),
    });
    // 34 folders inside the version folder: beyond the 32 levels a model may hold.
    await fsp.mkdir(path.join(repo, "deep", "1", ...Array.from({ length: 34 }, (_, i) => `d${i}`)), {
      recursive: true,
    });
    // 12 links to one folder of 20 files: the links are followed, so over the 200 entries allowed
    // here (the default's 20,000 is the same walk, a hundred times longer), from 32 made here.
    const files = path.join(repo, "many", "1", "files");
    await writeFiles(files, Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`f${i}`, ""])));
    for (let i = 0; i < 12; i++) await fsp.symlink("files", path.join(repo, "many", "1", `l${i}`));
    // A sparse file: 65 GiB to stat, nothing on the disk.
    await fsp.writeFile(path.join(repo, "large", "1", "weights.bin"), "");
    await fsp.truncate(path.join(repo, "large", "1", "weights.bin"), 65 * 1024 ** 3);
    // A link whose target has a name longer than any file system allows: stat fails with ENAMETOOLONG.
    await fsp.symlink("x".repeat(300), path.join(repo, "unreadable", "1", "long"));
    const r = await lintRepository(repo);
    const codes = (result: LintResult, name: string) =>
      result.models
        .find((m) => m.name === name)!
        .diagnostics.filter((d) => d.severity === "error")
        .map((d) => d.code);
    expect(codes(r, "deep")).toEqual(["model-files-too-deep"]);
    expect(codes(r, "many")).toEqual([]);
    expect(codes(r, "large")).toEqual(["model-files-too-large"]);
    expect(codes(r, "unreadable")).toEqual(["model-files-unreadable"]);
    // The entries' limit taken smaller, as a parameter (the default is checked below).
    const small = await lintRepository(repo, { modelFileLimits: { ...MODEL_FILE_LIMITS, maxEntries: 200 } });
    expect(codes(small, "many")).toEqual(["model-files-too-many-entries"]);
  });

  it("keeps to the limits README.md gives by default: 32 folder levels, 20,000 files and folders, 64 GiB", () => {
    expect(MODEL_FILE_LIMITS).toEqual({ maxDepth: 32, maxEntries: 20_000, maxBytes: 64 * 1024 ** 3 });
  });

  it("says what is wrong with a config that is a looping link or a device, not to check its permissions", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { ...pythonModel("loop"), ...pythonModel("zero") });
    await fsp.rm(path.join(repo, "loop", "config.pbtxt"));
    await fsp.symlink("config.pbtxt", path.join(repo, "loop", "config.pbtxt"));
    await fsp.rm(path.join(repo, "zero", "config.pbtxt"));
    await fsp.symlink("/dev/zero", path.join(repo, "zero", "config.pbtxt"));
    const r = await lintRepository(repo);
    for (const m of r.models) {
      const d = m.diagnostics.filter((x) => x.severity === "error");
      // One error for the one file, from the config rule.
      expect(d.map((x) => x.code)).toEqual(["config-unreadable"]);
      expect(`${d[0]!.message} ${d[0]!.hint}`).not.toMatch(/permission/i);
    }
    expect(r.models.find((m) => m.name === "loop")!.diagnostics[0]!.message).toContain("loops");
  });
});

describe("layouts users write: Triton's verdict, and where the file should go", () => {
  const local: LintOptions = { ...lintFacts("local"), gpuAvailable: false };
  async function lintOne(files: Record<string, string>, model: string, options: LintOptions = local) {
    const repo = await tempRepo();
    await writeFiles(repo, files);
    const r = await lintRepository(repo, options);
    const m = r.models.find((x) => x.name === model)!;
    const rel = (p: string) => path.relative(repo, p);
    return { m, rel, lines: m.diagnostics.map((d) => `${d.severity} ${d.code} ${rel(d.file)}: ${d.hint}`) };
  }

  it("a config.pbtxt inside the version folder: one error on that file, saying to move it up", async () => {
    const { m, lines } = await lintOne({ "m/1/config.pbtxt": pythonConfig("m"), "m/1/model.py": ECHO_MODEL_PY }, "m");
    expect(m.wouldLoad).toBe(false);
    expect(lines).toEqual([
      "error config-in-version-folder m/1/config.pbtxt: Move it to m/config.pbtxt; the version folder keeps only the model files.",
    ]);
  });

  it("configs in several version folders and none at the top: the error names each of them", async () => {
    const { m, lines } = await lintOne(
      {
        "m/1/config.pbtxt": pythonConfig("m", ECHO_IO, 1),
        "m/1/model.py": ECHO_MODEL_PY,
        "m/2/config.pbtxt": pythonConfig("m", ECHO_IO, 2),
        "m/2/model.py": ECHO_MODEL_PY,
      },
      "m",
    );
    expect(m.wouldLoad).toBe(false);
    expect(lines).toEqual([
      "error config-in-version-folder m/1/config.pbtxt: Triton reads one config for every version: move the one you mean to m/config.pbtxt and delete the others (m/2/config.pbtxt).",
    ]);
  });

  it("version configs beside the model's own: Triton serves the top one, each ignored file is a warning", async () => {
    const { m, lines } = await lintOne(
      {
        "m/config.pbtxt": pythonConfig("m"),
        "m/1/config.pbtxt": pythonConfig("m", ECHO_IO, 1),
        "m/1/model.py": ECHO_MODEL_PY,
      },
      "m",
    );
    expect(m.wouldLoad).toBe(true);
    expect(lines).toEqual([
      "warning config-in-version-folder m/1/config.pbtxt: Move what it sets into m/config.pbtxt and delete it (a version folder holds only the model files).",
    ]);
  });

  it("only *.py files, no version folder and no config: an error naming where the code goes", async () => {
    const { m, lines } = await lintOne({ "m/model.py": ECHO_MODEL_PY, "m/utils.py": "X = 1\n" }, "m");
    expect(m.wouldLoad).toBe(false);
    expect(m.diagnostics[0]!.message).toContain("model.py, utils.py at the top of the folder is never read");
    expect(lines).toEqual([
      "error version-missing m: Put the model file in a numbered version folder (m/1/model.py) and write m/config.pbtxt beside it (`triton-dev init` scaffolds one).",
    ]);
  });

  it.each([
    ["model.py", pythonConfig("m")],
    ["model.onnx", `name: "m"\nplatform: "onnxruntime_onnx"\nmax_batch_size: 8\n${ECHO_IO}`],
  ])("%s beside config.pbtxt instead of in m/1/: an error saying to move it there", async (file, config) => {
    const { m, lines } = await lintOne({ "m/config.pbtxt": config, [`m/${file}`]: "x" }, "m", {
      ...lintFacts("docker"),
    });
    expect(m.wouldLoad).toBe(false);
    expect(lines).toEqual([
      `error version-missing m/config.pbtxt: Move it into m/1/ (m/1/${file}); m/config.pbtxt stays where it is.`,
    ]);
  });

  it("no config with a non-python model file: the inferred backend, not in the local runtime", async () => {
    const files = { "m/1/model.plan": "engine" };
    const { m, lines } = await lintOne(files, "m");
    expect(m).toMatchObject({
      wouldLoad: false,
      unavailable: "needs the tensorrt backend, not in the local runtime",
    });
    expect(lines).toEqual([
      expect.stringMatching(
        /^warning backend-unavailable m: Serve it there: `triton-dev up --runtime docker` \(or --runtime kind\)/,
      ),
    ]);
    // Docker's image has TensorRT: Triton completes the config from the file.
    expect((await lintOne(files, "m", { ...lintFacts("docker") })).lines).toEqual([
      expect.stringMatching(/^warning config-missing m: /),
    ]);
  });

  it("no config and no model file Triton recognises: an error, not 'would load'", async () => {
    const { m, lines } = await lintOne({ "m/1/weights.bin": "w" }, "m");
    expect(m.wouldLoad).toBe(false);
    expect(lines).toEqual([
      expect.stringMatching(/^error backend-missing m: Write m\/config.pbtxt naming its backend/),
    ]);
  });

  it("an ensemble written with only ensemble_scheduling: one error, the root cause with its fix", async () => {
    const config = `name: "e"\nensemble_scheduling {\n  step [ { model_name: "m" model_version: -1 input_map { key: "INPUT0" value: "IN" } output_map { key: "OUTPUT0" value: "OUT" } } ]\n}\n`;
    const { m } = await lintOne({ ...pythonModel("m"), "e/config.pbtxt": config }, "e");
    expect(m.wouldLoad).toBe(false);
    expect(summary(m.diagnostics)).toEqual([
      'error ensemble-platform@2:1 ensemble_scheduling without platform: "ensemble": Triton cannot tell what runs this model ("Could not determine backend")',
    ]);
    expect(m.diagnostics[0]!.hint).toContain('Add platform: "ensemble".');
    expect(m.diagnostics[0]!.hint).toContain("input [ ... ], output [ ... ]");
  });
});
