#!/usr/bin/env node
// The longest functions and the largest files under src/ (issue [house-2], item 5: units a reader
// can hold), read with the TypeScript compiler's own parser so that a function's length is its
// body's lines, nested functions included in their parent's count and listed on their own too.
// Rerunnable before and after a change (no build needed; reads the .ts/.tsx sources):
//
//   node bench/longest-functions.mjs [--top 10] [--files 10] [--over 100] [--dir src] [--json]
//
// "function": a function declaration, method, constructor, accessor, function expression or arrow
// function; an unnamed one is named after the variable, property or call it is passed to.
// Generated code (`gen/` folders) is left out unless --with-gen: nobody reads it to change it.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const flag = (name, def) => (args.includes(name) ? args[args.indexOf(name) + 1] : def);
const TOP = Number(flag("--top", 10)) || 10;
const FILES = Number(flag("--files", 10)) || 10;
const OVER = Number(flag("--over", 100)) || 100;
const DIR = path.resolve(ROOT, flag("--dir", "src"));
const JSON_OUT = args.includes("--json");
const WITH_GEN = args.includes("--with-gen");

function sourceFiles(dir) {
  const out = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== "gen" || WITH_GEN) out.push(...sourceFiles(p));
    } else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith(".d.ts")) out.push(p);
  }
  return out;
}

function nameOf(node) {
  if (node.name && ts.isIdentifier(node.name)) return node.name.text;
  if (node.name) return node.name.getText();
  if (ts.isConstructorDeclaration(node)) return "constructor";
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (parent && (ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))) return parent.name.getText();
  if (parent && ts.isCallExpression(parent)) return `(callback of ${parent.expression.getText().slice(0, 40)})`;
  return "(anonymous)";
}

const isFunction = (n) =>
  ts.isFunctionDeclaration(n) ||
  ts.isMethodDeclaration(n) ||
  ts.isConstructorDeclaration(n) ||
  ts.isGetAccessorDeclaration(n) ||
  ts.isSetAccessorDeclaration(n) ||
  ts.isFunctionExpression(n) ||
  ts.isArrowFunction(n);

const functions = [];
const files = [];
for (const file of sourceFiles(DIR)) {
  const text = fs.readFileSync(file, "utf8");
  const rel = path.relative(ROOT, file);
  files.push({ file: rel, lines: text.split("\n").length - (text.endsWith("\n") ? 1 : 0) });
  const sf = ts.createSourceFile(
    file,
    text,
    ts.ScriptTarget.Latest,
    true,
    file.endsWith(".tsx") ? ts.ScriptKind.TSX : ts.ScriptKind.TS,
  );
  const visit = (node) => {
    if (isFunction(node) && node.body) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.end).line;
      functions.push({ name: nameOf(node), file: rel, line: start + 1, lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}

functions.sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file));
files.sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file));
const over = functions.filter((f) => f.lines > OVER).length;

if (JSON_OUT) {
  console.log(
    JSON.stringify(
      { functions: functions.slice(0, TOP), files: files.slice(0, FILES), over, threshold: OVER },
      null,
      2,
    ),
  );
} else {
  console.log(`Longest functions under ${path.relative(ROOT, DIR)}/ (lines, first to last):`);
  for (const f of functions.slice(0, TOP))
    console.log(`  ${String(f.lines).padStart(5)}  ${f.name}  ${f.file}:${f.line}`);
  console.log(`Functions over ${OVER} lines: ${over} of ${functions.length}`);
  console.log(`Largest files (lines):`);
  for (const f of files.slice(0, FILES)) console.log(`  ${String(f.lines).padStart(5)}  ${f.file}`);
}
