import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { UsageError } from "../errors.js";
import { type Diagnostic, countBySeverity, displayPath, formatDiagnostic } from "../repo/diagnostics.js";
import { type LintOptions, type LintResult, type LintedModel, lintRepository } from "../repo/lint.js";
import { ruleTable } from "../repo/rules.js";
import { BACKEND_HOMES, imageOfFlavour, lintFacts, RUNTIME_FACTS, type RuntimeKind } from "../runtimes/kinds.js";
import { detectNvidiaGpus } from "../gpu/detect.js";
import { resolvePaths } from "../config/paths.js";
import { requireTrustedHome } from "../config/home-trust.js";
import { type InterpreterFor, createConfigCompleter } from "../repo/auto-complete-run.js";
import { processOutput, type Output } from "./output.js";

export interface LintFlags {
  json?: boolean;
  runtime?: RuntimeKind;
  /** --image: the image `up --image` would run (docker, kind, cluster), whose backends are checked. */
  image?: string;
  /** true/false from --gpu/--no-gpu; undefined means "look at this machine". */
  gpu?: boolean;
  /** --disable-auto-complete-config: lint as Triton runs with that flag. */
  disableAutoCompleteConfig?: boolean;
  /** A model whose config, as Triton completes it from the model file, is printed after its diagnostics. */
  explain?: string;
  /** --run-model-code: run python models' auto_complete_config (their code) to check the config it completes. */
  runModelCode?: boolean;
  /** --list-rules: print the codes lint reports (repo/rules.ts) instead of checking a repository. */
  listRules?: boolean;
}

/**
 * `lint --list-rules`: one line per code any command reports (code, severity, area, the commands
 * that report it, what it means), or the rows as JSON.
 */
export function listRules(output: Output, json = false): number {
  const rows = ruleTable();
  if (json) {
    output.out(JSON.stringify(rows, null, 2));
    return 0;
  }
  const header = { code: "CODE", severity: "SEVERITY", area: "AREA", by: "REPORTED BY", description: "MEANING" };
  const lines = [header, ...rows.map((r) => ({ ...r, by: r.commands.join(",") }))];
  const width = (k: "code" | "severity" | "area" | "by") => Math.max(...lines.map((r) => r[k].length));
  const [code, severity, area, by] = [width("code"), width("severity"), width("area"), width("by")];
  for (const r of lines)
    output.out(
      `${r.code.padEnd(code)}  ${r.severity.padEnd(severity)}  ${r.area.padEnd(area)}  ${r.by.padEnd(by)}  ${r.description}`,
    );
  output.out(`${rows.length} codes`);
  return 0;
}

/**
 * Whether Triton will complete configs, as `up` would start it, and why that is assumed. `up`
 * keeps Triton's auto-complete on whenever a model needs it (runtimes that may turn it off do so
 * only when none does; the others always leave it on), so lint assumes it on unless told the
 * server runs with --disable-auto-complete-config.
 */
export function autoCompleteAssumption(flags: Pick<LintFlags, "runtime" | "disableAutoCompleteConfig">): {
  on: boolean;
  why: string;
} {
  if (flags.disableAutoCompleteConfig) return { on: false, why: "--disable-auto-complete-config" };
  return {
    on: true,
    why: flags.runtime ? `as \`up --runtime ${flags.runtime}\` runs Triton` : "Triton's default, as `up` runs it",
  };
}

export interface LintDeps {
  output?: Output;
  cwd?: string;
  /** How many NVIDIA GPUs this machine has; undefined when it cannot tell. */
  detectGpus?: () => Promise<number | undefined>;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** Models named in the summary's "would not load here" list; the rest are counted. */
const SUMMARY_NAMES = 3;

/**
 * "(4 of 5 would load here; resnet50_fp16 needs a GPU)": a model with errors does not load, and
 * neither does one whose warnings say this machine or runtime lacks what it needs.
 */
function loadSummary(result: LintResult, runtime: RuntimeKind | undefined): string {
  const total = result.models.length;
  if (total === 0) return "";
  const loading = result.models.filter((m) => m.wouldLoad).length;
  const notHere = result.models.filter((m) => m.unavailable);
  if (notHere.length === 0) return ` (${loading} of ${total} would load${runtimeCaveat(result, runtime)})`;
  const named = notHere.slice(0, SUMMARY_NAMES).map((m) => `${m.name} ${m.unavailable}`);
  if (notHere.length > SUMMARY_NAMES) named.push(`${notHere.length - SUMMARY_NAMES} more cannot load here`);
  return ` (${loading} of ${total} would load here${runtimeCaveat(result, runtime)}; ${named.join("; ")})`;
}

/**
 * Without --runtime, "would load" holds on a runtime that has each model's backend; the local one
 * (what `up` picks on a machine without Docker) has only python, so a model it cannot serve is
 * named, not counted silently as loading.
 */
function runtimeCaveat(result: LintResult, runtime: RuntimeKind | undefined): string {
  if (runtime) return "";
  const local = RUNTIME_FACTS.local.backends;
  const elsewhere = result.models.filter((m) => m.wouldLoad && m.backend && !local.includes(m.backend));
  if (elsewhere.length === 0) return "";
  // Each with where it runs (the backend homes' table): the runtime, and the image where the default lacks it.
  const named = elsewhere
    .slice(0, SUMMARY_NAMES)
    .map((m) => {
      const home = BACKEND_HOMES[m.backend!];
      const where = !home
        ? "an image built with it"
        : home.flavour === "py3"
          ? "docker or kind runtime"
          : `docker or kind runtime with ${imageOfFlavour(home.flavour)}`;
      return `${m.name} (${m.backend}: ${where})`;
    })
    .join(", ");
  const more = elsewhere.length > SUMMARY_NAMES ? ` and ${elsewhere.length - SUMMARY_NAMES} more` : "";
  return ` on a runtime with their backends; the local runtime has none for ${named}${more}: --runtime checks one runtime`;
}

/** Compiler-style text: findings about the repository, then per model errors then warnings, then a summary line. */
export function formatLintResult(
  result: LintResult,
  cwd: string,
  autoComplete?: { on: boolean; why: string },
  runtime?: RuntimeKind,
): string {
  const lines: string[] = [];
  if (result.repositoryDiagnostics.length > 0) {
    for (const d of result.repositoryDiagnostics) lines.push(formatDiagnostic(d, cwd));
    lines.push("");
  }
  for (const m of result.models) {
    if (m.diagnostics.length === 0) continue;
    const { errors, warnings } = countBySeverity(m.diagnostics);
    const counts = [errors ? plural(errors, "error") : "", warnings ? plural(warnings, "warning") : ""]
      .filter(Boolean)
      .join(", ");
    lines.push(`${m.name} (${displayPath(m.dir, cwd)}): ${counts}`);
    const byKind = (s: Diagnostic["severity"]) => m.diagnostics.filter((d) => d.severity === s);
    for (const d of [...byKind("error"), ...byKind("warning")]) lines.push(formatDiagnostic(d, cwd));
    lines.push("");
  }
  const notes = result.models.flatMap((m) => (m.notes ?? []).map((n) => `${displayPath(m.dir, cwd)}: note: ${n}`));
  if (notes.length > 0) lines.push(...notes, "");
  lines.push(
    `${plural(result.models.length, "model")} checked: ${plural(result.errorCount, "error")}, ${plural(result.warningCount, "warning")}${loadSummary(result, runtime)}${autoComplete ? `; auto-complete ${autoComplete.on ? "on" : "off"} (${autoComplete.on ? "assumed: " : ""}${autoComplete.why})` : ""}`,
  );
  return lines.join("\n");
}

/**
 * A model with a requirements.txt has its auto_complete_config run in the environment `up` builds
 * for it (the local runtime's, under the managed home or TRITON_DEV_ENVS_DIR), when it is built:
 * lint never installs anything. Without the managed environment the completer says it cannot run.
 */
async function builtEnvironments(env: NodeJS.ProcessEnv = process.env): Promise<InterpreterFor> {
  const paths = resolvePaths(env);
  const marker = await readManagedEnvironment(paths.envMarker);
  if (!marker)
    return () => Promise.resolve({ notRun: "the managed environment is not set up (run `triton-dev setup`)" });
  // The builder (and execa with it) loads only when a model with a requirements.txt completes its config.
  let builder: Promise<import("../envs/builder.js").EnvironmentBuilder> | undefined;
  return async (_model, dir) => {
    builder ??= import("../envs/builder.js").then(
      ({ EnvironmentBuilder, environmentsRootIn }) =>
        new EnvironmentBuilder({ root: environmentsRootIn(paths.home, env), base: marker, env }),
    );
    const found = await (await builder).find(path.join(dir, "requirements.txt")).catch(() => "not-built" as const);
    if (found === "empty") return undefined;
    if (found === "not-built")
      return { notRun: "environment not built (`triton-dev up` builds it from requirements.txt)" };
    return { python: found.python };
  };
}

/**
 * Which modules a python model imports that its environment lacks, read from its files by `ast`
 * (nothing of the repository runs): judged in the environment `up` built from its requirements.txt,
 * or, before it is built, in the managed one with the packages requirements.txt names taken as
 * there (warnings then: a listed package may provide a module under another name). Without the
 * managed environment, or for a runtime whose image's Python decides, nothing is said.
 */
async function importChecker(
  runtime: RuntimeKind | undefined,
  env: NodeJS.ProcessEnv = process.env,
): Promise<LintOptions["importChecker"]> {
  if (runtime && !RUNTIME_FACTS[runtime].buildsEnvironments) return undefined;
  const paths = resolvePaths(env);
  try {
    requireTrustedHome(paths.home);
  } catch {
    return undefined;
  }
  const marker = await readManagedEnvironment(paths.envMarker);
  if (!marker) return undefined;
  const [{ EnvironmentBuilder, environmentsRootIn }, imports, { checkRequirementsFile }, { canonicalName }] =
    await Promise.all([
      import("../envs/builder.js"),
      import("../envs/missing-imports.js"),
      import("../envs/requirements-check.js"),
      import("../envs/requirements.js"),
    ]);
  const builder = new EnvironmentBuilder({ root: environmentsRootIn(paths.home, env), base: marker, env });
  return async (model, dir, configText) => {
    const requirements = path.join(dir, "requirements.txt");
    let python = marker.python;
    let listed: Set<string> | undefined;
    if (fs.existsSync(requirements)) {
      const found = await builder.find(requirements).catch(() => "not-built" as const);
      if (typeof found === "object") python = found.python;
      else if (found === "not-built") {
        const resolved = checkRequirementsFile(requirements, dir, { model }).resolved;
        listed = new Set((resolved?.requirements ?? []).map((r) => canonicalName(r.name)));
      }
    }
    const versions = fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory() && /^\d+$/.test(e.name))
      .map((e) => e.name);
    const missing = [];
    for (const entry of imports.modelFiles(dir, versions, imports.modelFileName(configText))) {
      const r = await imports.findMissingImports({ entry, python }).catch(() => undefined);
      if (r) missing.push(...r.missing);
    }
    const left = listed ? imports.withoutListed(missing, listed) : missing;
    if (left.length === 0) return [];
    return imports.describeMissingImports(model, dir, left, { notBuilt: listed !== undefined }).diagnostics;
  };
}

/** The managed environment's Python and site-packages, from the marker `triton-dev setup` writes. */
async function readManagedEnvironment(file: string): Promise<{ python: string; sitePackages: string } | undefined> {
  try {
    const m = JSON.parse(await fsp.readFile(file, "utf8")) as { venvPython?: unknown; sitePackages?: unknown };
    return typeof m.venvPython === "string" && typeof m.sitePackages === "string"
      ? { python: m.venvPython, sitePackages: m.sitePackages }
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `lint --explain MODEL`: the model's findings, then its config as Triton holds it after
 * auto-complete (what it filled in, from which file, and whether auto-complete was assumed on).
 */
export function formatExplain(m: LintedModel, cwd: string): string {
  const lines = [`${m.name} (${displayPath(m.dir, cwd)})`];
  for (const d of m.diagnostics) lines.push(formatDiagnostic(d, cwd));
  const io = m.modelIO;
  if (!io) {
    lines.push(
      m.config
        ? "No model file was read for it (lint reads ONNX and OpenVINO models), so Triton holds config.pbtxt as written:"
        : "Its config.pbtxt could not be read, so there is no config to show.",
    );
    if (m.config) lines.push(JSON.stringify(m.config, null, 2));
    return lines.join("\n");
  }
  const mode = io.autoComplete
    ? `auto-complete on${io.assumed ? " (assumed: Triton's default, as `up` runs it)" : ""}`
    : "auto-complete off";
  lines.push(`The config Triton holds, with ${mode}, from ${displayPath(io.file, cwd)}:`);
  lines.push(JSON.stringify(io.completed, null, 2));
  lines.push(io.filled.length > 0 ? `Filled in from the model file: ${io.filled.join("; ")}.` : "Nothing filled in.");
  return lines.join("\n");
}

/** Runs `triton-dev lint` and returns its exit code: 0 clean (warnings allowed), 1 errors. */
export async function runLint(dir: string, flags: LintFlags, deps: LintDeps = {}): Promise<number> {
  const output = deps.output ?? processOutput;
  if (flags.listRules) return listRules(output, flags.json);
  const cwd = deps.cwd ?? process.cwd();
  const repo = path.resolve(cwd, dir);
  let st: fs.Stats;
  try {
    st = await fsp.stat(repo);
  } catch {
    throw new UsageError(`model repository ${dir} does not exist`, {
      hint: "Pass the folder that holds your models: `triton-dev lint path/to/models`.",
    });
  }
  if (!st.isDirectory()) {
    throw new UsageError(`${dir} is not a folder`, {
      hint: "Pass the model repository (the folder holding one sub-folder per model), not a file in it.",
    });
  }
  if (fs.existsSync(path.join(repo, "config.pbtxt"))) {
    throw new UsageError(`${dir} is a model, not a model repository`, {
      hint: `Pass the folder that holds it: \`triton-dev lint ${path.dirname(dir) || "."}\`.`,
    });
  }
  const autoComplete = autoCompleteAssumption(flags);
  // On is an assumption (how `up` will run Triton), so it is left for the rules to say so; off is what
  // the user told us.
  if (flags.image && (!flags.runtime || !RUNTIME_FACTS[flags.runtime].imageDecides))
    throw new UsageError("--image goes with --runtime docker, kind or cluster", {
      hint: "Name the runtime that would run the image, e.g. `triton-dev lint --runtime docker --image <ref>`.",
    });
  const options: LintOptions = {
    gpuMissingSeverity: "warning",
    ...(autoComplete.on ? {} : { autoComplete: false }),
    ...lintFacts(flags.runtime, flags.image),
  };
  if (flags.gpu !== undefined) {
    options.gpuAvailable = flags.gpu;
  } else {
    const count = await (deps.detectGpus ?? detectNvidiaGpus)();
    if (count !== undefined) {
      options.gpuAvailable = count > 0;
      if (count > 0) options.gpuCount = count;
    }
  }
  // Linting is what people do to a repository they have not read yet: its code runs only when asked.
  if (autoComplete.on && flags.runModelCode) {
    // The managed Python runs the model code: never from a home another user can change.
    requireTrustedHome(resolvePaths(process.env).home);
    options.completer = createConfigCompleter({ interpreterFor: await builtEnvironments(), refuse: "throw" });
  }
  const checker = await importChecker(flags.runtime);
  if (checker) options.importChecker = checker;
  const result = await lintRepository(repo, options);
  const explained = flags.explain === undefined ? undefined : result.models.find((m) => m.name === flags.explain);
  if (flags.explain !== undefined && !explained) {
    throw new UsageError(`model '${flags.explain}' is not in ${dir}`, {
      hint: `Pass one of its models: ${result.models.map((m) => m.name).join(", ") || "(it holds none)"}.`,
    });
  }
  if (explained && !flags.json) {
    output.out(formatExplain(explained, cwd));
    return explained.diagnostics.some((d) => d.severity === "error") ? 1 : 0;
  }
  if (flags.json) {
    output.out(
      JSON.stringify(
        {
          repository: repo,
          errorCount: result.errorCount,
          warningCount: result.warningCount,
          autoComplete,
          runModelCode: flags.runModelCode === true,
          repositoryDiagnostics: result.repositoryDiagnostics,
          models: result.models.map((m) => ({
            name: m.name,
            dir: m.dir,
            wouldLoad: m.wouldLoad,
            ...(m.unavailable ? { unavailable: m.unavailable } : {}),
            ...(m.backend ? { backend: m.backend } : {}),
            ...(m.notes ? { notes: m.notes } : {}),
            ...(m.completed ? { completed: true } : {}),
            diagnostics: m.diagnostics,
            ...(m === explained && m.modelIO ? { modelIO: m.modelIO } : {}),
          })),
        },
        null,
        2,
      ),
    );
  } else {
    output.out(formatLintResult(result, cwd, autoComplete, flags.runtime));
  }
  return result.errorCount > 0 ? 1 : 0;
}

export { detectNvidiaGpus };
