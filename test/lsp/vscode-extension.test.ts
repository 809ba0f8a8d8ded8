import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseTree, type MessageNode } from "../../src/repo/textproto.js";
import { ROOT } from "../helpers/cli.js";

// editors/vscode as VS Code reads it: the files its package.json names, and its TextMate grammar
// against the sample configs (the field names it colours are the ones the parser reads).

const EXT = path.join(ROOT, "editors/vscode");
const pkg = JSON.parse(fs.readFileSync(path.join(EXT, "package.json"), "utf8"));
const grammar = JSON.parse(fs.readFileSync(path.join(EXT, "syntaxes/pbtxt.tmLanguage.json"), "utf8"));

/** Every `match`, `begin` and `end` in the grammar. */
function patterns(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((n) => patterns(n, out));
  else if (node && typeof node === "object")
    for (const [k, v] of Object.entries(node)) {
      if ((k === "match" || k === "begin" || k === "end") && typeof v === "string") out.push(v);
      else patterns(v, out);
    }
  return out;
}

function fieldNames(m: MessageNode, out: string[] = []): string[] {
  for (const f of m.fields) {
    out.push(f.name);
    const items = f.value.kind === "list" ? f.value.items : [f.value];
    for (const i of items) if (i.kind === "message") fieldNames(i, out);
  }
  return out;
}

describe("the VS Code extension", () => {
  it("names files that exist, and starts `lsp` for config.pbtxt", () => {
    expect(fs.existsSync(path.join(EXT, pkg.main))).toBe(true);
    for (const l of pkg.contributes.languages) expect(fs.existsSync(path.join(EXT, l.configuration))).toBe(true);
    for (const g of pkg.contributes.grammars) {
      expect(fs.existsSync(path.join(EXT, g.path))).toBe(true);
      expect(g.scopeName).toBe(grammar.scopeName);
    }
    expect(pkg.contributes.languages[0].filenames).toContain("config.pbtxt");
    expect(fs.readFileSync(path.join(EXT, pkg.main), "utf8")).toMatch(/\[\.\.\.settings\.get\("args", \[\]\), "lsp"\]/);
  });

  it("has a grammar whose every pattern compiles, and that colours the field names the parser reads", () => {
    for (const p of patterns(grammar)) expect(() => new RegExp(p)).not.toThrow();
    const field = new RegExp(grammar.repository.field.match, "g");
    const dir = path.join(ROOT, "models");
    for (const model of fs.readdirSync(dir)) {
      const text = fs.readFileSync(path.join(dir, model, "config.pbtxt"), "utf8");
      const code = text
        .split("\n")
        .map((l) => l.replace(/#.*$/, "").replace(/"[^"]*"/g, '""'))
        .join("\n");
      const coloured = [...code.matchAll(field)].map((m) => m[1]);
      expect(coloured, model).toEqual(fieldNames(parseTree(text).root));
    }
  });
});
