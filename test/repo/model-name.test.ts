import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { lintRepository } from "../../src/repo/lint.js";
import { MAX_MODEL_NAME_LENGTH, modelNameProblem, servableName, shownName } from "../../src/repo/model-name.js";
import {
  ECHO_IO,
  ECHO_MODEL_PY,
  errors,
  posOf,
  pythonModel,
  removeTempRepos,
  tempRepo,
  writeFiles,
} from "./helpers.js";
import { lintFacts } from "../../src/runtimes/kinds.js";

describe("modelNameProblem", () => {
  // Served by the real tritonserver 2.51 with the python backend, loaded and inferred over HTTP.
  it.each(["plain_ok", "dash-ok", "dot.ok", "UPPER", "1digit", "-leading-dash", "a".repeat(MAX_MODEL_NAME_LENGTH)])(
    "passes %s",
    (name) => {
      expect(modelNameProblem(name)).toBeUndefined();
    },
  );

  // Each of these made the python backend's `bash -c` command line split (the stub exits and the
  // load never ends) or run part of the name (`inj$(touch PWNED)` created PWNED).
  it.each([
    ["with space", "a space"],
    ["semi;colon", "';'"],
    ["dollar$(id)", "'$', '(', ')'"],
    ["inj$(touch PWNED)", "'$', '(', a space, ')'"],
    ["back`tick`", "'`'"],
    ["quote'single", `'''`],
    ['quote"double', `'"'`],
    ["amp&x", "'&'"],
    ["pipe|x", "'|'"],
    ["star*x", "'*'"],
    ["brace{a,b}", "'{', '}'"],
    ["tab\tx", '"\\t"'],
    ["line\nfeed", '"\\n"'],
  ])("refuses %j: it names %s as what the shell acts on", (name, chars) => {
    const why = modelNameProblem(name);
    expect(why).toContain(`has ${chars}, which the shell acts on`);
    expect(why).toContain("bash");
  });

  // Served by Triton, but its HTTP API does not decode the percent-encoded name clients send.
  it.each(["at@x", "plus+x", "comma,x", "colon:x", "equals=x", "percent%x", "caret^x"])(
    "refuses %s: no HTTP request reaches it",
    (name) => {
      expect(modelNameProblem(name)).toMatch(/^has '.'.*HTTP API does not decode/);
    },
  );

  // UnicodeEncodeError in the python stub, whatever else is in the name.
  it.each(["modèle", "模型", "emoji😀", "naïve name"])("refuses the non-ASCII %s", (name) => {
    expect(modelNameProblem(name)).toMatch(/^has non-ASCII characters .*UnicodeEncodeError/);
  });

  it("refuses a name longer than the staged snapshot's folder can hold", () => {
    expect(modelNameProblem("a".repeat(MAX_MODEL_NAME_LENGTH + 1))).toContain(
      `is ${MAX_MODEL_NAME_LENGTH + 1} characters long`,
    );
  });
});

describe("servableName", () => {
  it.each([
    ["with space", "with_space"],
    ["inj$(touch PWNED)", "inj_touch_PWNED"],
    ["dollar$(id)", "dollar_id"],
    ["modèle", "modele"],
    ["naïve name", "naive_name"],
    ["模型", "model"],
    ["a".repeat(300), "a".repeat(MAX_MODEL_NAME_LENGTH)],
  ])("turns %j into %j", (name, expected) => {
    expect(servableName(name)).toBe(expected);
    expect(modelNameProblem(servableName(name))).toBeUndefined();
  });

  it("never suggests a name another model has", () => {
    expect(servableName("with space", new Set(["with_space", "with_space_2"]))).toBe("with_space_3");
  });
});

describe("shownName", () => {
  it("escapes control characters so a name cannot break a message's line", () => {
    expect(shownName("a\nb\u001b[2J")).toBe("a\\nb\\u001b[2J");
  });
});

/** A python model without a name line (Triton takes the folder's), so any folder name can be written. */
function unnamedPython(name: string, extra = ""): Record<string, string> {
  return { ...pythonModel(name, `backend: "python"\nmax_batch_size: 8\n${ECHO_IO}${extra}`) };
}

describe("lint of model names", () => {
  afterAll(removeTempRepos);

  it("refuses folders Triton cannot serve safely, says why and what to rename each to, and passes the rest", async () => {
    const repo = await tempRepo();
    const bad = ["with space", "semi;colon", "dollar$(id)", "inj$(touch PWNED)", "modèle", "at@x", "a".repeat(241)];
    await writeFiles(repo, {
      ...unnamedPython("good"),
      ...unnamedPython("with_space"), // taken: the suggestion for 'with space' must differ
      ...Object.assign({}, ...bad.map((n) => unnamedPython(n))),
    });
    const r = await lintRepository(repo, { ...lintFacts("local"), gpuAvailable: false });
    const byName = new Map(r.models.map((m) => [m.name, m]));
    expect(byName.get("good")!.wouldLoad).toBe(true);
    expect(byName.get("with_space")!.wouldLoad).toBe(true);
    for (const name of bad) {
      const m = byName.get(name)!;
      expect(m.wouldLoad, name).toBe(false);
      const [d, ...more] = m.diagnostics.filter((x) => x.code === "model-name-unsafe");
      expect(more).toEqual([]);
      expect(d).toMatchObject({ severity: "error", file: path.join(repo, name), line: 1, column: 1, model: name });
      expect(d!.message).toContain(`its name ${modelNameProblem(name)}`);
    }
    const hint = (n: string) => byName.get(n)!.diagnostics.find((x) => x.code === "model-name-unsafe")!.hint;
    expect(hint("with space")).toContain("Rename the folder to 'with_space_2'");
    expect(hint("inj$(touch PWNED)")).toContain("Rename the folder to 'inj_touch_PWNED'");
    expect(hint("modèle")).toContain("Rename the folder to 'modele'");
  });

  it("refuses an unsafe folder name also when the folder has no config.pbtxt", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, { "x$(id)/1/model.py": ECHO_MODEL_PY });
    const r = await lintRepository(repo);
    expect(r.models[0]!.diagnostics.map((d) => `${d.severity} ${d.code}`)).toEqual([
      "error model-name-unsafe",
      "warning config-missing",
    ]);
  });

  it("points at the ensemble step that runs a model by an unsafe name", async () => {
    const repo = await tempRepo();
    const ens = `platform: "ensemble"
max_batch_size: 8
${ECHO_IO}ensemble_scheduling {
  step [
    { model_name: "good" model_version: -1 input_map { key: "INPUT0" value: "INPUT0" } output_map { key: "OUTPUT0" value: "mid" } },
    { model_name: "with space" model_version: -1 input_map { key: "INPUT0" value: "mid" } output_map { key: "OUTPUT0" value: "OUTPUT0" } }
  ]
}
`;
    await writeFiles(repo, {
      ...unnamedPython("good"),
      ...unnamedPython("with space"),
      "ens/config.pbtxt": ens,
      "ens/1/": "",
    });
    const r = await lintRepository(repo);
    const steps = r.models.find((m) => m.name === "ens")!.diagnostics;
    const d = steps.find((x) => x.code === "ensemble-model-name-unsafe")!;
    expect(d).toMatchObject({
      severity: "error",
      file: path.join(repo, "ens", "config.pbtxt"),
      ...posOf(ens, '"with space"'),
    });
    expect(d.message).toContain("step 1 runs model 'with space'");
    expect(d.hint).toContain('model_name: "with_space"');
    // The step's finding says it all: not also "has errors" for the same model.
    expect(steps.map((x) => x.code)).not.toContain("ensemble-model-invalid");
  });

  it("points at the step also when no folder of that name exists", async () => {
    const repo = await tempRepo();
    const ens = `platform: "ensemble"
max_batch_size: 8
${ECHO_IO}ensemble_scheduling { step [ { model_name: "x;y" model_version: -1 input_map { key: "INPUT0" value: "INPUT0" } output_map { key: "OUTPUT0" value: "OUTPUT0" } } ] }
`;
    await writeFiles(repo, { "ens/config.pbtxt": ens, "ens/1/": "" });
    const d = (await lintRepository(repo)).diagnostics.filter((x) => x.code.startsWith("ensemble-model"));
    expect(d.map((x) => [x.code, x.line, x.column])).toEqual([
      ["ensemble-model-name-unsafe", posOf(ens, '"x;y"').line, posOf(ens, '"x;y"').column],
    ]);
  });

  // The python backend puts these on its `bash -c` command line too (measured: each created its file).
  it("refuses a python instance group name or default_model_filename the stub's shell would act on", async () => {
    const repo = await tempRepo();
    const group = `instance_group [ { name: "g$(touch PWNED_GROUP)" count: 1 kind: KIND_CPU } ]\n`;
    const file = `default_model_filename: "m$(touch PWNED_FILE).py"\n`;
    await writeFiles(repo, {
      ...unnamedPython("grp", group),
      ...unnamedPython("fname", file),
      "fname/1/m$(touch PWNED_FILE).py": ECHO_MODEL_PY,
      ...unnamedPython(
        "fine",
        `instance_group [ { name: "cpu_group-1.a" count: 1 kind: KIND_CPU } ]\ndefault_model_filename: "my_model.py"\n`,
      ),
      "fine/1/my_model.py": ECHO_MODEL_PY,
    });
    const r = await lintRepository(repo);
    const codes = (n: string) => errors(r.models.find((m) => m.name === n)!.diagnostics).map((d) => d.code);
    expect(codes("grp")).toEqual(["instance-group-name-unsafe"]);
    expect(codes("fname")).toEqual(["model-filename-unsafe"]);
    expect(codes("fine")).toEqual([]);
    const g = r.diagnostics.find((d) => d.code === "instance-group-name-unsafe")!;
    const gText = `backend: "python"\nmax_batch_size: 8\n${ECHO_IO}${group}`;
    expect(g).toMatchObject(posOf(gText, '"g$('));
  });
});
