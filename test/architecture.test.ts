/**
 * The rooms of src/ and what each may import (docs/ARCHITECTURE.md), checked on the source
 * itself: a change that breaks a rule fails here, with the file and import that broke it.
 */
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./helpers/cli.js";
import { circles, importGraph, room as roomOf } from "../bench/import-graph.mjs";

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
/** The runtime folders of src/runtimes/: every folder but the clients they share (runtimes/clients/). */
const runtimeFolders = () =>
  fs
    .readdirSync(path.join(SRC, "runtimes"), { withFileTypes: true })
    .filter((e) => e.isDirectory() && e.name !== "clients")
    .map((e) => e.name);
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

  // Type imports load nothing, but a reader follows them as much as any: a circle of them is a set
  // of files none of which can be read first (bench/import-graph.mjs measures the same graph).
  const graph = importGraph(SRC);
  const local = graph.edges.filter((e) => /\.tsx?$/.test(e.to));
  const typeViolations = (from: (f: string) => boolean, to: (t: string) => boolean): string[] =>
    local.filter((e) => from(e.from) && to(e.to)).map((e) => `${e.from} imports ${e.to} (${e.kind})`);

  it("has no import circle, type imports included", () => {
    expect(
      circles(
        graph.files,
        local.map((e) => [e.from, e.to]),
      ),
    ).toEqual([]);
  });

  it("has no loop between folders, type imports included", () => {
    const rooms = [...new Set(graph.files.map(roomOf))];
    expect(
      circles(
        rooms,
        local.map((e) => [roomOf(e.from), roomOf(e.to)]),
      ),
    ).toEqual([]);
  });

  it("keeps lint below the runtimes and perf below the session, type imports included", () => {
    // Lint takes the runtime's facts as data (LintOptions.server, from runtimes/kinds.ts lintFacts).
    expect(
      typeViolations(
        (f) => roomOf(f) === "repo",
        (t) => roomOf(t) === "runtimes",
      ),
    ).toEqual([]);
    // Perf takes the run it measures as a parameter (PerfDeps.run, from session/measured-run.ts).
    expect(
      typeViolations(
        (f) => roomOf(f) === "perf",
        (t) => roomOf(t) === "session",
      ),
    ).toEqual([]);
    // The driver interface and the run record name the runtimes without reaching the table that loads the drivers.
    expect(
      typeViolations(
        (f) => f === "runtimes/driver.ts" || roomOf(f) === "state",
        (t) => ["runtimes/kinds.ts", "runtimes/registry.ts"].includes(t),
      ),
    ).toEqual([]);
  });

  it("branches on a runtime's name only inside src/runtimes/", () => {
    const names = runtimeFolders().join("|");
    const branch = new RegExp(`(?:===|!==)\\s*["'](?:${names})["']|case\\s+["'](?:${names})["']\\s*:`);
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
      // config-edit.ts writes the user's config.pbtxt for `tune --apply` (a leaf of node:fs only).
      t === "state/atomic-write.ts" ||
      // lint checks a requirements.txt with the rules `up` refuses it by (leaves of node:fs only).
      ["envs/requirements-check.ts", "envs/requirements.ts", "envs/execution-env.ts"].includes(t) ||
      !t.endsWith(".ts");
    expect(
      violations(
        (f) => room(f) === "repo",
        (t) => !allowed(t),
      ),
    ).toEqual([]);
  });

  it("keeps lint's rule areas (repo/rules/) below lint and the table that assembles them", () => {
    const inRules = (f: string) => f.startsWith("repo/rules/");
    // An area reads configs and folders; lint.ts (its parts in lint/) runs the areas and rules.ts
    // lists them, so an area importing either (or anything above repo/) would run lint from inside a rule.
    expect(
      violations(
        inRules,
        (t) =>
          t === "repo/lint.ts" ||
          t.startsWith("repo/lint/") ||
          t === "repo/rules.ts" ||
          (t.includes("/") && !t.startsWith("repo/") && t.endsWith(".ts")),
      ),
    ).toEqual([]);
    // Outside repo/, the rules are reached through repo/rules.ts (the table) or repo/lint.ts.
    expect(violations((f) => room(f) !== "repo", inRules)).toEqual([]);
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
    // `setup` installs the local runtime's environment itself; `doctor` asks each driver.
    const setup = (f: string) => /^cli\/setup[-.]/.test(f);
    expect(violations((f) => room(f) !== "runtimes" && !setup(f), inRuntimeFolder)).toEqual([]);
  });

  it("loads drivers lazily: kinds.ts and the registry reach a runtime's code only with import()", () => {
    // kinds.ts imports each runtime's facts.ts (import-free) statically, its driver only when called.
    expect(
      violations(
        (f) => f === "runtimes/registry.ts" || f === "runtimes/kinds.ts",
        (t) => /^runtimes\/[^/]+\//.test(t) && !/^runtimes\/[^/]+\/facts\.ts$/.test(t),
        true,
      ),
    ).toEqual([]);
  });

  it("adds a runtime as a folder and one line: kinds.ts lists each runtime folder once, and nothing else names one", () => {
    const folders = runtimeFolders().sort();
    const kinds = fs.readFileSync(path.join(SRC, "runtimes/kinds.ts"), "utf8");
    const lines = [
      ...kinds.matchAll(
        /^\s+([a-z][a-z0-9-]*): \{ facts: (\w+), load: \(\) => import\("\.\/([^/]+)\/driver\.js"\) \},$/gm,
      ),
    ];
    expect(lines.map((m) => m[1]).sort()).toEqual(folders);
    for (const m of lines) expect(m[3]).toBe(m[1]);
    // Each folder has its facts and its driver, which exports `driver` for kinds.ts to load.
    for (const name of folders) {
      expect(fs.existsSync(path.join(SRC, "runtimes", name, "facts.ts")), `runtimes/${name}/facts.ts`).toBe(true);
      const driver = fs.readFileSync(path.join(SRC, "runtimes", name, "driver.ts"), "utf8");
      expect(driver, `runtimes/${name}/driver.ts exports driver`).toMatch(/export \{ \w+ as driver \}/);
    }
    // Outside its folder, a runtime's name is a branch nowhere (the rule above) and a file name
    // nowhere but in kinds.ts: the session, status, doctor, the CLI and the dashboard ask the driver.
    const named = files
      .filter((f) => !rel(f).startsWith("runtimes/") || rel(f) === "runtimes/driver.ts")
      .flatMap((f) =>
        [...fs.readFileSync(f, "utf8").matchAll(/["'][./]*runtimes\/([a-z-]+)\/[^"']+["']/g)].map(
          (m) => `${rel(f)}: ${m[0]}`,
        ),
      )
      .filter((x) => !/^cli\/setup-/.test(x));
    expect(named).toEqual([]);
    // The README and docs/ARCHITECTURE.md say so.
    for (const doc of ["README.md", "docs/ARCHITECTURE.md"]) {
      const text = fs.readFileSync(path.join(ROOT, doc), "utf8");
      expect(text, doc).toMatch(/### Adding a runtime/);
      expect(text, doc).toMatch(/runtimes\/<name>\/facts\.ts/);
      expect(text, doc).toMatch(/runtimes\/kinds\.ts/);
    }
  });

  it("keeps each runtime's facts.ts free of code: type imports only, the NGC images' table, or another runtime's facts", () => {
    expect(
      violations(
        (f) => /^runtimes\/[^/]+\/facts\.ts$/.test(f),
        (t) => !/^runtimes\/[^/]+\/facts\.ts$/.test(t) && t !== "runtimes/ngc-images.ts",
      ),
    ).toEqual([]);
    expect(
      violations(
        (f) => f === "runtimes/facts.ts" || f === "runtimes/ngc-images.ts",
        () => true,
      ),
    ).toEqual([]);
  });

  it("keeps each runtime to its own folder: no runtime folder imports another's, type imports included", () => {
    // What several runtimes use lives beside them: the clients (runtimes/clients/kubectl/ for kind and
    // cluster, runtimes/clients/container/ for docker and kind's nodes) and the runtime-neutral files
    // at the top of runtimes/. The clients serve every runtime, so they import none.
    const folderOf = (f: string) => /^runtimes\/([^/]+)\//.exec(f)?.[1];
    const crossings = files.flatMap((file) => {
      const from = rel(file);
      const a = folderOf(from);
      if (a === undefined) return [];
      const text = fs.readFileSync(file, "utf8");
      const specs = [
        ...text.matchAll(/^\s*(?:import|export)\s+(?:type\s+)?(?:[^;"']*?\sfrom\s+)?["'](\.[^"']+)["']/gm),
        ...text.matchAll(/import\(\s*["'](\.[^"']+)["']\s*\)/g),
      ].map((m) => m[1]!);
      return specs
        .map((spec) => rel(path.resolve(path.dirname(file), spec)).replace(/\.js$/, ".ts"))
        .filter((to) => {
          const b = folderOf(to);
          return b !== undefined && b !== a && b !== "clients";
        })
        .map((to) => `${from} imports ${to}`);
    });
    expect(crossings).toEqual([]);
  });

  it("keeps the drivers off the table of runtimes: nothing in a runtime folder imports kinds.ts, flags.ts or the registry", () => {
    expect(
      violations(
        (f) => /^runtimes\/[^/]+\//.test(f),
        (t) => ["runtimes/kinds.ts", "runtimes/flags.ts", "runtimes/registry.ts"].includes(t),
      ),
    ).toEqual([]);
  });

  it("keeps the FakeDriver beside the driver interface and out of every run: nothing in src/ imports it", () => {
    const fake = "runtimes/fake-driver.ts";
    expect(
      violations(
        () => true,
        (t) => t === fake,
      ),
    ).toEqual([]);
    // It stands in for driver.ts with Node and types alone, so it brings no test code into src/.
    expect(
      violations(
        (f) => f === fake,
        (t) => t.includes("/") && t.endsWith(".ts") && !t.startsWith("runtimes/") && t !== "state/run-state.ts",
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
      [...closure].filter(
        (f) => f === "dockerode" || (/^runtimes\/(docker|kind)\//.test(f) && !f.endsWith("/facts.ts")),
      ),
    ).toEqual([]);
  });

  it("keeps tune/ on perf's machinery, given the run it tunes on: no runtime, reload, session, CLI or dashboard", () => {
    expect(
      violations(
        (f) => room(f) === "tune",
        (t) => ["runtimes", "reload", "cli", "ui", "session"].includes(room(t)),
      ),
    ).toEqual([]);
  });

  it("keeps lsp/ an editor's view of the repository and the run's state: no runtime, server, CLI or dashboard", () => {
    const allowed = (t: string) =>
      !t.includes("/") ||
      !t.endsWith(".ts") ||
      ["lsp", "repo", "state", "config", "log"].includes(room(t)) ||
      // The one watcher of model folders, and a detached run's events as the dashboard follows them
      // (a runtime's own events among them, told apart without importing a runtime).
      t === "reload/watch.ts" ||
      t === "session/run-events.ts" ||
      t === "events/driver-event.ts";
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

  it("has no loop between folders: the rooms' imports form a hierarchy", () => {
    const edges = new Map<string, Set<string>>();
    for (const i of imports) {
      if (!i.to.includes("/")) continue;
      const a = room(i.from);
      const b = room(i.to);
      if (a !== b) edges.set(a, new Set([...(edges.get(a) ?? []), b]));
    }
    const loops: string[] = [];
    const reach = (from: string, to: string, seen = new Set<string>()): boolean => {
      if (from === to) return true;
      if (seen.has(from)) return false;
      seen.add(from);
      return [...(edges.get(from) ?? [])].some((n) => reach(n, to, seen));
    };
    for (const [a, outs] of edges) for (const b of outs) if (reach(b, a)) loops.push(`${a} -> ${b} -> ... -> ${a}`);
    expect(loops).toEqual([]);
  });

  it("keeps perf/ on Triton's wire, given the run it measures: no session, runtime code, reload, CLI or dashboard", () => {
    const allowed = (t: string) =>
      !t.includes("/") ||
      !t.endsWith(".ts") ||
      ["perf", "triton", "repo", "state", "net", "config", "log"].includes(room(t)) ||
      // Which runtime shares /dev/shm, and the facts a variant is linted by (the run itself is a parameter).
      t === "runtimes/kinds.ts";
    expect(
      violations(
        (f) => room(f) === "perf",
        (t) => !allowed(t),
      ),
    ).toEqual([]);
  });

  it("keeps ui/ to rendering and what it polls: no session, runtime, reload or CLI", () => {
    expect(
      violations(
        (f) => room(f) === "ui",
        (t) => ["session", "runtimes", "reload", "cli", "envs", "k8s", "lsp"].includes(room(t)),
      ),
    ).toEqual([]);
  });

  it("keeps session/ off the runtimes' code: only the driver interface, the registry, the table and flags", () => {
    const allowed = ["runtimes/driver.ts", "runtimes/registry.ts", "runtimes/kinds.ts", "runtimes/flags.ts"];
    expect(
      violations(
        (f) => room(f) === "session",
        (t) => room(t) === "runtimes" && !allowed.includes(t),
      ),
    ).toEqual([]);
    expect(
      violations(
        (f) => room(f) === "session",
        (t) => ["cli", "ui", "perf", "tune", "lsp"].includes(room(t)),
      ),
    ).toEqual([]);
  });

  it("keeps state/ a leaf of records and files: only Triton's python errors below it", () => {
    const allowed = (t: string) =>
      !t.includes("/") ||
      !t.endsWith(".ts") ||
      ["state", "config"].includes(room(t)) ||
      t === "triton/python-errors.ts";
    expect(
      violations(
        (f) => room(f) === "state",
        (t) => !allowed(t),
      ),
    ).toEqual([]);
  });

  it("keeps the command definitions light: a `*-command.ts` loads its action only when it runs", () => {
    const light = (t: string) =>
      !t.endsWith(".ts") ||
      [
        "cli/options.ts",
        "cli/defaults.ts",
        "cli/output.ts",
        "config/paths.ts",
        "runtimes/kinds.ts",
        "perf/inputs.ts",
        "perf/protocol.ts",
      ].includes(t) ||
      /^cli\/[a-z-]+-command\.ts$/.test(t);
    expect(
      violations(
        (f) => /^cli\/[a-z-]+-command\.ts$/.test(f),
        (t) => !light(t),
        true,
      ),
    ).toEqual([]);
  });

  it("keeps cli/ at the top: no other room imports it", () => {
    expect(
      violations(
        (f) => room(f) !== "cli",
        (t) => room(t) === "cli",
      ),
    ).toEqual([]);
  });
});
