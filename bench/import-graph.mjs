// The import graph of src/, read with oxc's parser (vite's parseSync), and the figures of its shape:
//
//   node bench/import-graph.mjs [--src DIR] [--json]
//
// floors: the longest chain of value imports (a file counts as one floor; dynamic import() calls
// are value imports too, as they load code), for files and for rooms (src/'s top folders);
// back-arrows: the imports, type-only ones included, that close a loop (the back edges of a
// depth-first walk in file-name order), and the circles: the sets of files that reach each other
// (strongly connected components of more than one file). test/architecture.test.ts reads the graph
// through importGraph() and circles(), so the test and these figures agree on what an import is.
// Starts nothing and needs no build.
//
// oxc rather than TypeScript's own parser: the same edges, in the same order, for src/ and test/
// (checked when it changed), for about a third of the CPU (0.5 s against 1.3 s for src/, and no
// 9 MB typescript.js to load), which test/architecture.test.ts pays on every unit run.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseSync } from "vite";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function sourceFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === "gen" ? [] : sourceFiles(p);
    return /\.tsx?$/.test(e.name) && !e.name.endsWith(".d.ts") ? [p] : [];
  });
}

/** A string literal, or a template literal without substitutions (`import(`./x.js`)`). */
function literal(node) {
  if (node?.type === "Literal" && typeof node.value === "string") return node.value;
  if (node?.type === "TemplateLiteral" && node.expressions.length === 0) return node.quasis[0].value.cooked;
  return undefined;
}

/**
 * An import or re-export whose every binding is a type loads nothing at run time; one without
 * bindings (`import "x"`, `import {} from "x"`) or with a default or namespace binding does.
 */
function typeOnly(node, kind, specifierKind) {
  if (node[kind] === "type") return true;
  return (node.specifiers ?? []).length > 0 && node.specifiers.every((s) => s[specifierKind] === "type");
}

/** The imports of one file's syntax tree, `{start, spec, kind}`, in no particular order. */
function importsOf(program) {
  const found = [];
  const add = (node, spec, kind) => found.push({ start: node.start, spec, kind });
  const visit = (node) => {
    switch (node.type) {
      case "ImportDeclaration":
        add(node, node.source.value, typeOnly(node, "importKind", "importKind") ? "type" : "value");
        break;
      case "TSImportEqualsDeclaration": {
        const ref = node.moduleReference;
        if (ref.type === "TSExternalModuleReference" && ref.expression.type === "Literal")
          add(node, ref.expression.value, node.importKind === "type" ? "type" : "value");
        break;
      }
      case "ExportNamedDeclaration":
        if (node.source) add(node, node.source.value, typeOnly(node, "exportKind", "exportKind") ? "type" : "value");
        break;
      case "ExportAllDeclaration":
        add(node, node.source.value, node.exportKind === "type" ? "type" : "value");
        break;
      case "TSImportType": // `import("x").T`, `typeof import("x")`
        if (node.source?.type === "Literal") add(node, node.source.value, "type");
        break;
      case "ImportExpression": {
        const spec = literal(node.source);
        if (spec !== undefined) add(node, spec, "dynamic");
        break;
      }
    }
    for (const key in node) {
      const v = node[key];
      if (v === null || typeof v !== "object") continue;
      if (Array.isArray(v)) {
        for (const c of v) if (c !== null && typeof c === "object" && typeof c.type === "string") visit(c);
      } else if (typeof v.type === "string") visit(v);
    }
  };
  visit(program);
  return found;
}

/**
 * Every import of the .ts/.tsx files under `src` (gen/ folders left out, as generated code),
 * `{from, to, kind}` with `kind` "value" (a static import that loads code), "dynamic" (`import()`)
 * or "type" (`import type`, an import of types only, `export type ... from`, `import("x").T`);
 * `to` is a file relative to `src` when the import is relative, else the package's name. Each
 * file's imports come in the order they are written.
 */
export function importGraph(src = path.join(ROOT, "src")) {
  const files = sourceFiles(src);
  const rel = (f) => path.relative(src, f).split(path.sep).join("/");
  const edges = [];
  for (const file of files) {
    const text = fs.readFileSync(file, "utf8");
    const { program } = parseSync(file, text, { lang: file.endsWith(".tsx") ? "tsx" : "ts" });
    // A node comes before the nodes inside it, so the order by start is the order they are written.
    const found = importsOf(program).sort((a, b) => a.start - b.start);
    for (const { spec, kind } of found) {
      let to = spec;
      if (spec.startsWith(".")) {
        const base = path.resolve(path.dirname(file), spec).replace(/\.js$/, "");
        const target = [`${base}.ts`, `${base}.tsx`, path.join(base, "index.ts")].find((f) => fs.existsSync(f));
        if (!target) continue;
        to = rel(target);
      }
      edges.push({ from: rel(file), to, kind });
    }
  }
  return { files: files.map(rel).sort(), edges };
}

export const room = (f) => f.split("/")[0];
const local = (to) => /\.tsx?$/.test(to);

function adjacency(nodes, pairs) {
  const adj = new Map(nodes.map((n) => [n, new Set()]));
  for (const [a, b] of pairs) {
    if (!adj.has(a)) adj.set(a, new Set());
    if (!adj.has(b)) adj.set(b, new Set());
    if (a !== b) adj.get(a).add(b);
  }
  for (const [n, outs] of adj) adj.set(n, [...outs].sort());
  return new Map([...adj].sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** Strongly connected components of more than one node (Tarjan's), each sorted, largest first. */
export function circles(nodes, pairs) {
  const adj = adjacency(nodes, pairs);
  const index = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  const out = [];
  let i = 0;
  // Iterative, so a deep graph cannot overflow the stack.
  for (const start of adj.keys()) {
    if (index.has(start)) continue;
    const work = [[start, 0]];
    while (work.length) {
      const top = work[work.length - 1];
      const [v, k] = top;
      if (k === 0) {
        index.set(v, i);
        low.set(v, i);
        i++;
        stack.push(v);
        on.add(v);
      }
      const outs = adj.get(v);
      if (k < outs.length) {
        top[1]++;
        const w = outs[k];
        if (!index.has(w)) work.push([w, 0]);
        else if (on.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
        continue;
      }
      work.pop();
      if (work.length) {
        const u = work[work.length - 1][0];
        low.set(u, Math.min(low.get(u), low.get(v)));
      }
      if (low.get(v) === index.get(v)) {
        const scc = [];
        let w;
        do {
          w = stack.pop();
          on.delete(w);
          scc.push(w);
        } while (w !== v);
        if (scc.length > 1) out.push(scc.sort());
      }
    }
  }
  return out.sort((a, b) => b.length - a.length || (a[0] < b[0] ? -1 : 1));
}

/** The edges that close a loop in a depth-first walk (nodes and edges in name order). */
export function backArrows(nodes, pairs) {
  const adj = adjacency(nodes, pairs);
  const state = new Map();
  const back = [];
  for (const start of adj.keys()) {
    if (state.has(start)) continue;
    const work = [[start, 0]];
    state.set(start, "open");
    while (work.length) {
      const top = work[work.length - 1];
      const [v, k] = top;
      const outs = adj.get(v);
      if (k < outs.length) {
        top[1]++;
        const w = outs[k];
        if (!state.has(w)) {
          state.set(w, "open");
          work.push([w, 0]);
        } else if (state.get(w) === "open") back.push([v, w]);
        continue;
      }
      state.set(v, "done");
      work.pop();
    }
  }
  return back;
}

/** The longest chain (in nodes) of a graph; loops are taken as one node each. */
export function floors(nodes, pairs) {
  const adj = adjacency(nodes, pairs);
  const comp = new Map();
  for (const c of circles(nodes, pairs)) for (const n of c) comp.set(n, c[0]);
  const id = (n) => comp.get(n) ?? n;
  const memo = new Map();
  const chainFrom = new Map();
  const depth = (n) => {
    const c = id(n);
    if (memo.has(c)) return memo.get(c);
    memo.set(c, 1); // guards a loop taken as one node
    let best = 1;
    let next;
    for (const m of [...adj.keys()].filter((x) => id(x) === c).flatMap((x) => adj.get(x))) {
      if (id(m) === c) continue;
      const d = 1 + depth(m);
      if (d > best) {
        best = d;
        next = m;
      }
    }
    memo.set(c, best);
    chainFrom.set(c, next);
    return best;
  };
  let top;
  let most = 0;
  for (const n of adj.keys()) {
    const d = depth(n);
    if (d > most) {
      most = d;
      top = n;
    }
  }
  const chain = [];
  for (let n = top; n !== undefined; n = chainFrom.get(id(n))) chain.push(n);
  return { floors: most, chain };
}

/** The figures the issue tracks, from one reading of the graph. */
export function measure(src) {
  const { files, edges } = importGraph(src);
  const mine = edges.filter((e) => local(e.to));
  const value = mine.filter((e) => e.kind !== "type").map((e) => [e.from, e.to]);
  const valueStatic = mine.filter((e) => e.kind === "value").map((e) => [e.from, e.to]);
  const all = mine.map((e) => [e.from, e.to]);
  const rooms = [...new Set(files.map(room))].sort();
  const roomPairs = (pairs) => pairs.map(([a, b]) => [room(a), room(b)]);
  const fileFloors = floors(files, value);
  const roomFloors = floors(rooms, roomPairs(value));
  return {
    files: files.length,
    imports: { value: valueStatic.length, dynamic: value.length - valueStatic.length, type: all.length - value.length },
    floors: { files: fileFloors.floors, filesStaticOnly: floors(files, valueStatic).floors, rooms: roomFloors.floors },
    longestFileChain: fileFloors.chain,
    longestRoomChain: roomFloors.chain,
    valueImports: { circles: circles(files, value).length, backArrows: backArrows(files, value).length },
    withTypeImports: {
      circles: circles(files, all),
      backArrows: backArrows(files, all).map(([a, b]) => `${a} -> ${b}`),
      roomCircles: circles(rooms, roomPairs(all)),
      roomBackArrows: backArrows(rooms, roomPairs(all)).map(([a, b]) => `${a} -> ${b}`),
    },
  };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const at = args.indexOf("--src");
  const src = at >= 0 ? path.resolve(args[at + 1]) : path.join(ROOT, "src");
  const m = measure(src);
  if (args.includes("--json")) {
    process.stdout.write(`${JSON.stringify(m, null, 2)}\n`);
  } else {
    const w = m.withTypeImports;
    const lines = [
      `src: ${m.files} files; imports: ${m.imports.value} value, ${m.imports.dynamic} dynamic, ${m.imports.type} type-only`,
      `floors (longest value-import chain): ${m.floors.files} files (${m.floors.filesStaticOnly} static imports only), ${m.floors.rooms} rooms`,
      `  rooms: ${m.longestRoomChain.join(" > ")}`,
      `  files: ${m.longestFileChain.join(" > ")}`,
      `value imports: ${m.valueImports.circles} circles, ${m.valueImports.backArrows} back-arrows`,
      `with type imports: ${w.circles.length} circles (${w.circles.map((c) => c.length).join(", ") || "none"} files), ${w.backArrows.length} back-arrows; rooms: ${w.roomCircles.length} circles, ${w.roomBackArrows.length} back-arrows`,
      ...w.circles.map((c, n) => `  circle ${n + 1} (${c.length}): ${c.join(" ")}`),
      ...w.backArrows.map((b) => `  back-arrow: ${b}`),
      ...w.roomCircles.map((c) => `  room circle: ${c.join(" ")}`),
      ...w.roomBackArrows.map((b) => `  room back-arrow: ${b}`),
    ];
    process.stdout.write(`${lines.join("\n")}\n`);
  }
}
