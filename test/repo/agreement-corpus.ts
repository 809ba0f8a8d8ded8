/**
 * The whole agreement corpus on disk, for bench/lint-agreement.mjs: every case of
 * agreement-cases.ts (verdicts measured on tritonserver 2.51) and of
 * model-io/conformance-cases.ts (verdicts derived from the backends' rules), in one repository
 * per way of linting them, with the verdict Triton reaches on each. The bench runs a built CLI's
 * `lint --json` over each repository and counts where its verdict is Triton's.
 */
import fsp from "node:fs/promises";
import path from "node:path";
import { scaffoldPythonModel } from "../../src/repo/init.js";
import { AUTO_COMPLETE_CASES, CASES, SCAFFOLD } from "./agreement-cases.js";
import { MODEL_FILE_CASES } from "./model-io/conformance-cases.js";
import { makeOnnxModels } from "./model-io/onnx-models.js";
import { writeFiles } from "./helpers.js";

export interface CorpusGroup {
  /** The repository folder's name under the corpus folder. */
  name: string;
  /** How Triton's verdicts were reached. */
  source: "measured" | "derived";
  /** The `lint` flags that lint the group as its verdicts were reached. */
  flags: string[];
  /** Flags that only a lint knowing them gets (an older CLI refuses unknown flags). */
  optionalFlags: string[];
  cases: Array<{ model: string; triton: "loads" | "refuses"; lint: string }>;
}

const verdict = (lint: string): "loads" | "refuses" => (lint === "accepted" ? "loads" : "refuses");

/** Writes the corpus under `dir` (which must be empty or absent) and says what is where. */
export async function writeCorpus(dir: string): Promise<CorpusGroup[]> {
  await fsp.mkdir(dir, { recursive: true });
  const groups: CorpusGroup[] = [
    {
      // As agreement.integration.test.ts serves them: the local runtime, no GPU, auto-complete off.
      name: "measured-auto-complete-off",
      source: "measured",
      flags: ["--runtime", "local", "--no-gpu"],
      optionalFlags: ["--disable-auto-complete-config"],
      cases: [
        ...CASES.map((c) => ({ model: c.model, triton: verdict(c.lint), lint: c.lint })),
        ...[SCAFFOLD].map((model) => ({ model, triton: "loads" as const, lint: "accepted" })),
      ],
    },
    {
      name: "measured-auto-complete-on",
      source: "measured",
      flags: ["--runtime", "local", "--no-gpu"],
      optionalFlags: [],
      cases: AUTO_COMPLETE_CASES.map((c) => ({ model: c.model, triton: verdict(c.lint), lint: c.lint })),
    },
    {
      // As conformance.integration.test.ts lints them: no runtime (the verdicts are the backends' own).
      name: "derived-auto-complete-on",
      source: "derived",
      flags: ["--gpu"],
      optionalFlags: [],
      cases: MODEL_FILE_CASES.filter((c) => c.autoComplete !== false).map((c) => ({
        model: c.model,
        triton: verdict(c.lint),
        lint: c.lint,
      })),
    },
    {
      name: "derived-auto-complete-off",
      source: "derived",
      flags: ["--gpu"],
      optionalFlags: ["--disable-auto-complete-config"],
      cases: MODEL_FILE_CASES.filter((c) => c.autoComplete === false).map((c) => ({
        model: c.model,
        triton: verdict(c.lint),
        lint: c.lint,
      })),
    },
  ];
  const repo = (g: string) => path.join(dir, g);
  for (const c of CASES) await writeFiles(repo(groups[0]!.name), c.files);
  await scaffoldPythonModel(repo(groups[0]!.name), SCAFFOLD);
  for (const c of AUTO_COMPLETE_CASES) await writeFiles(repo(groups[1]!.name), c.files);
  const onnx = await makeOnnxModels();
  try {
    for (const c of MODEL_FILE_CASES) {
      const files: Record<string, string | Uint8Array> = {
        [`${c.model}/config.pbtxt`]: `name: "${c.model}"\n${c.config}`,
      };
      for (const [name, content] of Object.entries(c.files))
        files[`${c.model}/1/${name}`] =
          typeof content === "string" ? content : await fsp.readFile(onnx.file(content.onnx));
      await writeFiles(repo(c.autoComplete === false ? groups[3]!.name : groups[2]!.name), files);
    }
  } finally {
    await onnx.remove();
  }
  return groups;
}
