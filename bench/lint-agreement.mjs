#!/usr/bin/env node
// Benchmark: how often lint's verdict ("would load" or not) is Triton's, over the whole agreement
// corpus: the cases of test/repo/agreement-cases.ts, whose verdicts a real tritonserver 2.51
// reached (agreement.integration.test.ts), and of test/repo/model-io/conformance-cases.ts, whose
// verdicts are derived from the backends' rules (no Triton here has those backends). The corpus
// is written once (test/repo/agreement-corpus.ts, bundled with esbuild), one repository per way
// of linting it, and each CLI's `lint --json` runs over the same folders: the built one, and with
// --vs another build (an older commit's dist/cli/main.js) beside it. A flag the other build does
// not know (--disable-auto-complete-config) is left out for it. Printed per group and in all:
// cases whose verdict agrees, and of those, how many name the case's reason (lint's finding code).
// The auto-complete cases run auto_complete_config in the managed environment (TRITON_DEV_HOME).
//
//   npm run build && node bench/lint-agreement.mjs [--vs OTHER/dist/cli/main.js] [--dir DIR] [--list] [--out FILE.json]
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { ROOT, requireBuild, table } from "./lib.mjs";

requireBuild();
const args = process.argv.slice(2);
const flag = (name, def) => (args.includes(name) ? args[args.indexOf(name) + 1] : def);
const DIR = path.resolve(flag("--dir", "/tmp/triton-dev-bench/lint-agreement"));
const OUT = flag("--out", undefined);
const LIST = args.includes("--list");
const OURS = path.join(ROOT, "dist/cli/main.js");
const VS = flag("--vs", undefined);
if (VS && !fs.existsSync(VS)) {
  console.error(`bench: --vs ${VS} does not exist (build that checkout first)`);
  process.exit(2);
}

// The corpus module imports the test helpers, which find the repository from their own file, so
// the bundle sits two folders below the root as test/repo/*.ts does (bundle/ is ignored by git).
const esbuild = await import("esbuild");
const bundle = path.join(ROOT, "bundle", "agreement", "corpus.mjs");
await esbuild.build({
  entryPoints: [path.join(ROOT, "test/repo/agreement-corpus.ts")],
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  packages: "external",
  outfile: bundle,
  logLevel: "error",
});
const { writeCorpus } = await import(pathToFileURL(bundle).href);
fs.rmSync(DIR, { recursive: true, force: true });
const groups = await writeCorpus(DIR);

function lintOf(cli, group) {
  const help = spawnSync(process.execPath, [cli, "lint", "--help"], { encoding: "utf8" }).stdout;
  const optional = group.optionalFlags.filter((f) => help.includes(f));
  const started = Date.now();
  const r = spawnSync(
    process.execPath,
    [cli, "lint", path.join(DIR, group.name), "--json", ...group.flags, ...optional],
    {
      encoding: "utf8",
      maxBuffer: 256 * 1024 * 1024,
    },
  );
  if (r.status !== 0 && r.status !== 1) throw new Error(`${cli} lint exited ${r.status}:\n${r.stderr}`);
  return { json: JSON.parse(r.stdout), ms: Date.now() - started, flags: [...group.flags, ...optional] };
}

/** Per case: lint's verdict against Triton's, and whether lint names the case's reason. */
function judge(group, json) {
  return group.cases.map((c) => {
    const m = json.models.find((x) => x.name === c.model);
    const loads = m?.wouldLoad === true;
    const verdict = loads === (c.triton === "loads");
    const errors = (m?.diagnostics ?? []).filter((d) => d.severity === "error");
    const reason =
      verdict &&
      (c.triton === "loads"
        ? errors.length === 0
        : (m?.diagnostics ?? []).some((d) => d.code === c.lint && (d.severity === "error" || m.unavailable)));
    const codes = [...new Set((m?.diagnostics ?? []).map((d) => `${d.severity[0]}:${d.code}`))].join(" ");
    return {
      model: c.model,
      triton: c.triton,
      expected: c.lint,
      lint: loads ? "loads" : "refuses",
      verdict,
      reason,
      codes,
    };
  });
}

const clis = [{ label: "this build", cli: OURS }, ...(VS ? [{ label: "--vs", cli: path.resolve(VS) }] : [])];
const results = [];
for (const { label, cli } of clis) {
  for (const g of groups) {
    const { json, ms, flags } = lintOf(cli, g);
    results.push({ label, cli, group: g.name, source: g.source, flags, ms, cases: judge(g, json) });
  }
}

const count = (rs, key) => rs.reduce((n, r) => n + r.cases.filter((c) => c[key]).length, 0);
const total = (rs) => rs.reduce((n, r) => n + r.cases.length, 0);
const cell = (rs) => `${count(rs, "verdict")}/${total(rs)} (${count(rs, "reason")} with its reason)`;
const rows = [["group", "source", "cases", ...clis.map((c) => c.label)]];
for (const g of groups) {
  rows.push([
    g.name,
    g.source,
    g.cases.length,
    ...clis.map((c) => cell(results.filter((r) => r.label === c.label && r.group === g.name))),
  ]);
}
for (const source of ["measured", "derived"]) {
  rows.push([
    `all ${source}`,
    "",
    total(results.filter((r) => r.label === "this build" && r.source === source)),
    ...clis.map((c) => cell(results.filter((r) => r.label === c.label && r.source === source))),
  ]);
}
rows.push([
  "all",
  "",
  total(results.filter((r) => r.label === "this build")),
  ...clis.map((c) => cell(results.filter((r) => r.label === c.label))),
]);
console.log(`lint's verdict equal to Triton's (agreeing cases / cases), corpus in ${DIR}`);
for (const c of clis) console.log(`  ${c.label}: ${c.cli}`);
console.log(table(rows));

for (const { label } of clis) {
  const wrong = results
    .filter((r) => r.label === label)
    .flatMap((r) => r.cases.filter((c) => !c.verdict || LIST).map((c) => ({ ...c, group: r.group })));
  if (wrong.length === 0) continue;
  console.log(`\n${label}: ${LIST ? "every case" : "cases whose verdict is not Triton's"}`);
  console.log(
    table([
      ["group", "model", "Triton", "lint", "case's reason", "lint's findings"],
      ...wrong.map((c) => [c.group, c.model, c.triton, c.lint, c.expected, c.codes || "-"]),
    ]),
  );
}
if (OUT) fs.writeFileSync(OUT, JSON.stringify({ dir: DIR, clis, results }, null, 2));
