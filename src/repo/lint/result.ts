/**
 * What lint answers (LintResult, LintedModel): the analysed models as findings sorted and counted
 * (toResult), with the findings on the repository itself (emptyRepository, notAModelFolder).
 */
import path from "node:path";
import { type Diagnostic, compareDiagnostics, countBySeverity, dedupeDiagnostics } from "../diagnostics.js";
import type { NotAModelFolder } from "../layout.js";
import type { ModelConfigJson } from "../model-config.js";
import type { ModelIOReport } from "../model-io/compare.js";
import type { ErrorCode, WarningCode } from "../rules.js";
import type { Analysed } from "./model.js";

export interface LintedModel {
  name: string;
  /** Absolute path of the model folder. */
  dir: string;
  /** The parsed config in Triton's JSON form; absent when config.pbtxt is missing or unreadable. */
  config?: ModelConfigJson;
  diagnostics: Diagnostic[];
  /**
   * Whether Triton would load it on this machine with the chosen runtime: no error, and nothing
   * the machine or runtime lacks (those are warnings, since the config may be meant elsewhere).
   */
  wouldLoad: boolean;
  /**
   * Why a model without errors would still not load here, as a phrase that follows its name
   * ("needs a GPU"); absent when nothing here stops it.
   */
  unavailable?: string;
  /** What lint could not check and why (auto_complete_config not run here), one sentence each. */
  notes?: string[];
  /** Whether the config checked is the one auto_complete_config completed. */
  completed?: boolean;
  /** The backend Triton runs it with, as the config names it or Triton infers it; absent for ensembles. */
  backend?: string;
  /** How Triton completes the config from the model file (`lint --explain`); absent when no model file was read. */
  modelIO?: ModelIOReport;
}

export interface LintResult {
  models: LintedModel[];
  /** Findings about the repository as a whole rather than one model (it holds no model). */
  repositoryDiagnostics: Diagnostic[];
  /** Every diagnostic of the repository and of every model above, errors first. */
  diagnostics: Diagnostic[];
  errorCount: number;
  warningCount: number;
}

export function toResult(models: Analysed[], repositoryDiagnostics: Diagnostic[] = []): LintResult {
  const linted: LintedModel[] = models.map((m) => {
    const diagnostics = dedupeDiagnostics(m.reporter.diagnostics).sort(compareDiagnostics);
    const clean = !diagnostics.some((d) => d.severity === "error");
    return {
      name: m.name,
      dir: m.layout.dir,
      ...(m.parsed ? { config: m.parsed.json } : {}),
      diagnostics,
      wouldLoad: clean && !m.unavailable,
      ...(clean && m.unavailable ? { unavailable: m.unavailable } : {}),
      ...(m.notes ? { notes: m.notes } : {}),
      ...(m.completed ? { completed: true } : {}),
      ...(m.backend ? { backend: m.backend } : {}),
      ...(m.modelIO ? { modelIO: m.modelIO } : {}),
    };
  });
  const all = [...repositoryDiagnostics, ...linted.flatMap((m) => m.diagnostics)].sort(compareDiagnostics);
  const { errors, warnings } = countBySeverity(all);
  return { models: linted, repositoryDiagnostics, diagnostics: all, errorCount: errors, warningCount: warnings };
}

/** An empty repository is almost always the wrong folder; `up` refuses it too (requireModelRepository). */
export function emptyRepository(repo: string): Diagnostic {
  return {
    severity: "error",
    file: repo,
    line: 1,
    column: 1,
    message: `model repository '${path.basename(repo) || repo}' holds no model directories`,
    hint: `A model directory holds config.pbtxt and a numbered version folder (my_model/config.pbtxt, my_model/1/model.py): pass the folder that holds such directories, or scaffold one with \`triton-dev init ${repo}\`.`,
    code: "repository-empty" satisfies ErrorCode,
  };
}

/**
 * A link the user probably meant as a model: said, since it is silently not served otherwise. A
 * warning, as the other models are served all the same.
 */
export function notAModelFolder(e: NotAModelFolder): Diagnostic {
  const where =
    e.why === "links to a file"
      ? "a file"
      : e.code === "ENOENT"
        ? "which does not exist"
        : e.code === "ELOOP"
          ? "which leads back to itself"
          : `which cannot be followed (${e.code ?? "unknown error"})`;
  return {
    severity: "warning",
    file: e.path,
    line: 1,
    column: 1,
    message: `'${e.name}' is a symbolic link to ${e.target}, ${where}: it is not a model folder, so it is not served`,
    hint: "Point the link at a model folder (one holding config.pbtxt and a numbered version folder), or remove it.",
    code: (e.why === "links to a file" ? "model-link-not-directory" : "model-link-dangling") satisfies WarningCode,
  };
}
