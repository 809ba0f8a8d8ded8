/**
 * The rooms of src/ and what each may import (docs/ARCHITECTURE.md), checked on the source
 * itself: a change that breaks a rule fails here, with the file and import that broke it.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./helpers/cli.js";

const SRC = path.join(ROOT, "src");

interface Import {
  from: string;
  /** Resolved source file (relative to src/), or a package name. */
  to: string;
  dynamic: boolean;
}

function sourceFiles(dir = SRC): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === "gen" ? [] : sourceFiles(p);
    return /\.tsx?$/.test(e.name) ? [p] : [];
  });
}

/** Value imports (type-only ones vanish at build time and load nothing). */
function importsOf(file: string): Import[] {
  const text = fs.readFileSync(file, "utf8");
  const out: Import[] = [];
  const add = (spec: string, dynamic: boolean) => {
    if (!spec.startsWith(".")) {
      out.push({ from: rel(file), to: spec, dynamic });
      return;
    }
    const base = path.resolve(path.dirname(file), spec).replace(/\.js$/, "");
    const target = [`${base}.ts`, `${base}.tsx`].find((f) => fs.existsSync(f));
    if (target) out.push({ from: rel(file), to: rel(target), dynamic });
  };
  for (const m of text.matchAll(/^\s*(?:import|export)\s+(type\s+)?(?:[^;"']*?\sfrom\s+)?["']([^"']+)["']/gm)) {
    if (!m[1]) add(m[2]!, false);
  }
  for (const m of text.matchAll(/import\(\s*["']([^"']+)["']\s*\)/g)) add(m[1]!, true);
  return out;
}

function rel(file: string): string {
  return path.relative(SRC, file).split(path.sep).join("/");
}

const files = sourceFiles();
const imports = files.flatMap(importsOf);
const room = (f: string) => f.split("/")[0]!;

function violations(from: (f: string) => boolean, to: (t: string) => boolean, allowDynamic = false): string[] {
  return imports
    .filter((i) => from(i.from) && to(i.to) && !(allowDynamic && i.dynamic))
    .map((i) => `${i.from} imports ${i.to}`);
}

describe("the rooms of src/", () => {
  it("has no import cycle", () => {
    const graph = new Map<string, string[]>();
    for (const i of imports)
      if (i.to.endsWith(".ts") || i.to.endsWith(".tsx")) graph.set(i.from, [...(graph.get(i.from) ?? []), i.to]);
    const state = new Map<string, "open" | "done">();
    const cycles: string[] = [];
    const visit = (f: string, trail: string[]) => {
      if (state.get(f) === "done") return;
      if (state.get(f) === "open") {
        cycles.push([...trail.slice(trail.indexOf(f)), f].join(" -> "));
        return;
      }
      state.set(f, "open");
      for (const t of graph.get(f) ?? []) visit(t, [...trail, f]);
      state.set(f, "done");
    };
    for (const f of graph.keys()) visit(f, []);
    expect(cycles).toEqual([]);
  });

  it("branches on a runtime's name only inside src/runtimes/", () => {
    const branch = /(?:===|!==)\s*["'](?:local|docker|kind)["']|case\s+["'](?:local|docker|kind)["']\s*:/;
    const found = files
      .filter((f) => !rel(f).startsWith("runtimes/"))
      .flatMap((f) =>
        fs
          .readFileSync(f, "utf8")
          .split("\n")
          .map((line, n) => (branch.test(line) ? `${rel(f)}:${n + 1}: ${line.trim()}` : undefined))
          .filter((x): x is string => x !== undefined),
      );
    expect(found).toEqual([]);
  });

  it("keeps repo/ to what is in a folder and whether it is valid", () => {
    const allowed = (t: string) =>
      !t.includes("/") ||
      ["repo", "log", "config"].includes(room(t)) ||
      t === "runtimes/kinds.ts" ||
      // config-edit.ts writes the user's config.pbtxt for `tune --apply` (a leaf of node:fs only).
      t === "state/atomic-write.ts" ||
      !t.endsWith(".ts");
    expect(
      violations(
        (f) => room(f) === "repo",
        (t) => !allowed(t),
      ),
    ).toEqual([]);
  });

  it("keeps reload/ out of sessions, runtimes, the CLI and the dashboard", () => {
    expect(
      violations(
        (f) => room(f) === "reload",
        (t) => ["session", "runtimes", "cli", "ui", "perf"].includes(room(t)),
      ),
    ).toEqual([]);
  });

  it("keeps envs/ a leaf: it builds environments from requirements.txt and knows nothing of runs or servers", () => {
    const allowed = (t: string) => !t.includes("/") || !t.endsWith(".ts") || ["envs", "log", "state"].includes(room(t));
    expect(
      violations(
        (f) => room(f) === "envs",
        (t) => !allowed(t),
      ),
    ).toEqual([]);
  });

  it("keeps runtimes/ below sessions: drivers never import the session, reload, CLI or dashboard", () => {
    expect(
      violations(
        (f) => room(f) === "runtimes",
        (t) => ["session", "reload", "cli", "ui", "perf", "repo"].includes(room(t)),
      ),
    ).toEqual([]);
  });

  it("reaches a runtime's code only through its driver: nothing outside runtimes/ imports a runtime folder", () => {
    const inRuntimeFolder = (t: string) => /^runtimes\/[^/]+\//.test(t);
    // `setup` and `doctor` install and check the runtimes' prerequisites themselves.
    const setup = (f: string) => /^cli\/(setup|doctor)[-.]/.test(f);
    expect(violations((f) => room(f) !== "runtimes" && !setup(f), inRuntimeFolder)).toEqual([]);
  });

  it("loads drivers lazily: the registry imports them only with import()", () => {
    expect(
      violations(
        (f) => f === "runtimes/registry.ts",
        (t) => /^runtimes\/[^/]+\//.test(t),
        true,
      ),
    ).toEqual([]);
  });

  it("keeps dockerode off the path of a local `up`", () => {
    const closure = new Set<string>();
    const walk = (f: string) => {
      if (closure.has(f)) return;
      closure.add(f);
      for (const i of imports) if (i.from === f && !i.dynamic) walk(i.to);
    };
    walk("session/session.ts");
    walk("runtimes/local/driver.ts");
    // A runtime's facts.ts (import-free: names, flags, backends) is no code of the runtime.
    expect(
      [...closure].filter((f) => f === "dockerode" || (/^runtimes\/(docker|kind)\//.test(f) && !f.endsWith("/facts.ts"))),
    ).toEqual([]);
  });

  it("keeps tune/ on perf's machinery: no runtime, reload, session beyond the recorded run, CLI or dashboard", () => {
    expect(
      violations(
        (f) => room(f) === "tune",
        (t) =>
          ["runtimes", "reload", "cli", "ui"].includes(room(t)) ||
          (room(t) === "session" && t !== "session/current-run.ts"),
      ),
    ).toEqual([]);
  });

  it("keeps lsp/ an editor's view of the repository and the run's state: no runtime, server, CLI or dashboard", () => {
    const allowed = (t: string) =>
      !t.includes("/") ||
      !t.endsWith(".ts") ||
      ["lsp", "repo", "state", "config", "log"].includes(room(t)) ||
      // The one watcher of model folders, and a detached run's events as the dashboard follows them.
      t === "reload/watch.ts" ||
      t === "session/run-events.ts";
    expect(
      violations(
        (f) => room(f) === "lsp",
        (t) => !allowed(t),
      ),
    ).toEqual([]);
    // The language server library and the server itself load only for `triton-dev lsp`.
    expect(
      violations(
        (f) => room(f) !== "lsp" && f !== "cli/lsp-action.ts",
        (t) => room(t) === "lsp" || t.startsWith("vscode-languageserver"),
      ),
    ).toEqual([]);
  });

  it("keeps k8s/ (manifests for any cluster) independent of the runtimes", () => {
    expect(
      violations(
        (f) => room(f) === "k8s",
        (t) => room(t) === "runtimes",
      ),
    ).toEqual([]);
  });
});
