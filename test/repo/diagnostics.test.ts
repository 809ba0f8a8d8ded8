import { describe, expect, it } from "vitest";
import {
  clipLongRuns,
  type Diagnostic,
  DiagnosticError,
  compareDiagnostics,
  countBySeverity,
  dedupeDiagnostics,
  displayPath,
  formatDiagnostic,
} from "../../src/repo/diagnostics.js";
import { UserError } from "../../src/errors.js";

const d = (over: Partial<Diagnostic> = {}): Diagnostic => ({
  severity: "error",
  file: "/work/models/x/config.pbtxt",
  line: 12,
  column: 5,
  message: "dimension 0 of input 'a' is 0",
  code: "dims-invalid",
  model: "x",
  ...over,
});

describe("formatDiagnostic", () => {
  it("writes path:line:col: severity: message, then an indented hint", () => {
    expect(formatDiagnostic(d({ hint: "Use -1." }), "/work")).toBe(
      "models/x/config.pbtxt:12:5: error: dimension 0 of input 'a' is 0\n  hint: Use -1.",
    );
    expect(formatDiagnostic(d({ severity: "warning" }), "/work")).toBe(
      "models/x/config.pbtxt:12:5: warning: dimension 0 of input 'a' is 0",
    );
  });

  it("keeps paths outside the working directory absolute", () => {
    expect(formatDiagnostic(d(), "/elsewhere")).toBe(
      "/work/models/x/config.pbtxt:12:5: error: dimension 0 of input 'a' is 0",
    );
    expect(displayPath("/work", "/work")).toBe(".");
  });
});

describe("ordering and counting", () => {
  it("puts errors first, then file, line and column", () => {
    const list = [
      d({ severity: "warning", line: 1 }),
      d({ line: 9 }),
      d({ file: "/a", line: 50 }),
      d({ line: 9, column: 1 }),
    ];
    expect(list.sort(compareDiagnostics).map((x) => `${x.severity[0]}${x.file}:${x.line}:${x.column}`)).toEqual([
      "e/a:50:5",
      "e/work/models/x/config.pbtxt:9:1",
      "e/work/models/x/config.pbtxt:9:5",
      "w/work/models/x/config.pbtxt:1:5",
    ]);
    expect(countBySeverity(list)).toEqual({ errors: 3, warnings: 1 });
  });

  it("drops exact repeats only", () => {
    expect(dedupeDiagnostics([d(), d(), d({ column: 6 })])).toHaveLength(2);
  });
});

describe("DiagnosticError", () => {
  it("is a UserError naming the first diagnostic", () => {
    const err = new DiagnosticError([d({ hint: "Use -1." }), d({ line: 20 })]);
    expect(err).toBeInstanceOf(UserError);
    expect(err.message).toBe("/work/models/x/config.pbtxt:12:5: dimension 0 of input 'a' is 0");
    expect(err.hint).toBe("Use -1.");
    expect(err.diagnostics).toHaveLength(2);
  });
});

describe("clipLongRuns", () => {
  it("leaves ordinary text alone and cuts a run of more than 200 characters without a space", () => {
    const sentence = "a message ".repeat(30);
    expect(clipLongRuns(sentence)).toBe(sentence);
    expect(clipLongRuns(`name 'x${"y".repeat(499)}' is wrong`)).toBe(
      `name 'x${"y".repeat(58)}…(502 characters) is wrong`,
    );
  });
});
