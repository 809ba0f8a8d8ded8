/**
 * The rule table (src/repo/rules.ts and its areas in src/repo/rules/): what `lint --list-rules`
 * prints, and a case for every code: a model Triton is measured against (the agreement cases) or
 * a unit test that expects the code.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { AREAS, MODEL_RULES, ruleTable } from "../../src/repo/rules.js";
import { AUTO_COMPLETE_CASES, CASES } from "./agreement-cases.js";
import { ROOT } from "./helpers.js";
import { MODEL_FILE_CASES } from "./model-io/conformance-cases.js";

const rows = ruleTable();

/** Test files other than this one, by path. */
function testFiles(dir = path.join(ROOT, "test")): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === "fixtures" ? [] : testFiles(p);
    return /\.tsx?$/.test(e.name) && p !== path.join(ROOT, "test/repo/rule-table.test.ts") ? [p] : [];
  });
}

/**
 * The codes the test files expect: every code written as a string literal of its own, outside a
 * line that asserts its absence (`.not.`) and outside the line of a case that only names it.
 */
function codesInTests(): Map<string, string> {
  const found = new Map<string, string>();
  for (const file of testFiles())
    fs.readFileSync(file, "utf8")
      .split("\n")
      .forEach((line, i) => {
        if (line.includes(".not.")) return;
        for (const m of line.matchAll(/["'`]([a-z0-9]+(?:-[a-z0-9]+)+)["'`]/g))
          if (!found.has(m[1]!)) found.set(m[1]!, `${path.relative(ROOT, file)}:${i + 1}`);
      });
  return found;
}

describe("the rule table", () => {
  it("has each code once, in kebab-case, with a severity and a one-line meaning", () => {
    const codes = rows.map((r) => r.code);
    expect(codes.filter((c, i) => codes.indexOf(c) !== i)).toEqual([]);
    for (const r of rows) {
      expect(r.code).toMatch(/^[a-z0-9]+(-[a-z0-9]+)+$/);
      expect(["error", "warning", "error or warning"]).toContain(r.severity);
      expect(r.description, r.code).toMatch(/^[a-z(].{10,}[^.]$/);
      expect(r.description.length, r.code).toBeLessThanOrEqual(120);
      expect(r.description, r.code).not.toContain("\n");
    }
    // About 140: a change in the count is a rule added or gone, and this says which area holds it.
    expect(rows.length).toBe(new Set(codes).size);
  });

  it("runs every model rule of every area, each once", () => {
    const inAreas = AREAS.flatMap((a) => a.rules);
    expect(new Set(inAreas).size).toBe(inAreas.length);
    expect([...MODEL_RULES].sort((a, b) => a.name.localeCompare(b.name))).toEqual(
      [...inAreas].sort((a, b) => a.name.localeCompare(b.name)),
    );
    // An area without model rules says where its codes come from.
    for (const a of AREAS) if (a.rules.length === 0) expect(a.reportedBy, a.area).toBeTruthy();
  });

  it("has every area file of src/repo/rules/ in the table", async () => {
    const dir = path.join(ROOT, "src/repo/rules");
    const areaFiles = fs
      .readdirSync(dir)
      .filter((f) => f.endsWith(".ts") && !["rule.ts", "reporter.ts", "codes.ts"].includes(f));
    for (const f of areaFiles) {
      const exports = Object.values((await import(path.join(dir, f))) as Record<string, unknown>);
      expect(
        exports.some((e) => (AREAS as readonly unknown[]).includes(e)),
        `${f} exports no area of rules.ts AREAS`,
      ).toBe(true);
    }
  });

  it("has a case for every code: an agreement case against Triton, or a unit test expecting it", () => {
    const agreement = new Set(
      [...CASES, ...AUTO_COMPLETE_CASES, ...MODEL_FILE_CASES].flatMap((c) => [
        c.lint,
        ...("warning" in c && c.warning ? [c.warning] : []),
      ]),
    );
    const inTests = codesInTests();
    // Lint's codes; those of other commands (staging, environments, the editor's verdict) come from
    // code outside lint, typed by the table (Diagnostic.code), and are listed, not linted for.
    const without = rows
      .filter((r) => r.commands.includes("lint"))
      .map((r) => r.code)
      .filter((c) => !agreement.has(c) && !inTests.has(c));
    expect(without, "codes no test produces: add a case to test/repo/agreement-cases.ts or a unit test").toEqual([]);
  });

  it("knows every code the tests expect from lint", () => {
    // The other way round: a code a test names but no table has was renamed or removed from the table.
    const known = new Set<string>(rows.map((r) => r.code));
    const agreementCodes = [...CASES, ...AUTO_COMPLETE_CASES, ...MODEL_FILE_CASES]
      .map((c) => c.lint)
      .filter((c) => c !== "accepted" && !c.startsWith("scaffold"));
    expect(agreementCodes.filter((c) => !known.has(c))).toEqual([]);
  });
});
