// Save -> READY latency of hot reload, p50/p95 over N saves of a sample python model, in the same
// run: triton-dev --reload explicit and --reload poll (--poll-secs 1), each a detached `up` on a
// copy of models/ with its latency read from the run's edit timeline (events.jsonl), beside raw
// tritonserver in poll mode watching a copy of the model's folder directly (Triton's default
// --repository-poll-secs 15, and 1), its latency read from its log ("successfully loaded").
//
//   npm run build && TRITON_DEV_HOME=... node bench/reload-latency.mjs \
//     [--edits 30] [--model image_classifier] [--save rename|inplace] [--raw15-edits N] [--no-raw] [--out FILE.json]
//
// Every latency runs from the moment the new model.py became visible (the rename, or the start of
// an in-place write) to READY. Saves are spaced by 300 ms plus, in poll mode, a random part of the
// poll interval (seeded), so they land at every point of Triton's poll cycle. After each READY one
// request checks what is served: a model with a SEED line gets a new seed per save, so its output
// must change. Goals (issue 4): explicit p95 <= 1 s; poll p95 <= poll-secs + 1 s.
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fmt, table } from "./lib.mjs";
import {
  LineFollower,
  ModelEditor,
  arg,
  copyModels,
  flag,
  infer,
  mean,
  percentile,
  readEnvironment,
  rng,
  sameOutput,
  sleep,
  startRawTriton,
  startUp,
  tritonLogTime,
} from "./reload-lib.mjs";

const EDITS = arg("--edits", 30);
const MODEL = arg("--model", "image_classifier");
const STYLE = arg("--save", "rename");
const RAW15_EDITS = arg("--raw15-edits", EDITS);
const NO_RAW = flag("--no-raw");
const OUT = arg("--out", undefined);
const GAP_MS = 300;
const random = rng(arg("--seed", 4));

/** The Triton log lines of one load of MODEL: "loading: M:1" at or after `from`, then its outcome. */
async function tritonLoad(logF, since, timeoutMs, fromIndex = 0) {
  const loading = await logF.waitFor(
    (l) => l.includes(`loading: ${MODEL}:`) && (tritonLogTime(l) ?? 0) >= since - 1,
    timeoutMs,
    fromIndex,
  );
  if (!loading) return undefined;
  const done = await logF.waitFor(
    (l) => l.includes(`successfully loaded '${MODEL}'`) || l.includes(`failed to load '${MODEL}'`),
    timeoutMs,
    loading.index + 1,
  );
  if (!done) return undefined;
  return {
    loadingAt: tritonLogTime(loading.item),
    doneAt: tritonLogTime(done.item),
    ok: done.item.includes("successfully"),
  };
}

async function measureOurs(mode, pollSecs) {
  const label = mode === "explicit" ? "triton-dev --reload explicit" : `triton-dev --reload poll (${pollSecs} s)`;
  console.error(`bench: ${label}: starting ...`);
  const up = await startUp({ mode, pollSecs });
  const samples = [];
  try {
    const editor = new ModelEditor(up.modelsDir, MODEL, STYLE);
    const events = new LineFollower(up.eventsFile, { parse: JSON.parse });
    const logF = new LineFollower(up.logFile, { fromEnd: true });
    let prev = await infer(up.baseUrl, MODEL);
    for (let k = 1; k <= EDITS; k++) {
      await sleep(GAP_MS + (mode === "poll" ? random() * pollSecs * 1000 : 0));
      events.poll();
      const from = events.items.length;
      logF.poll();
      const logFrom = logF.items.length;
      const savedAt = await editor.save(k);
      const end = await events.waitFor(
        (e) => e.type === "edit" && e.model === MODEL && ["ready", "failed", "refused", "unchanged"].includes(e.phase),
        90_000,
        from,
      );
      if (!end) {
        samples.push({ k, outcome: "timeout" });
        console.error(`bench: ${label}: edit ${k} reached no outcome within 90 s`);
        continue;
      }
      const phases = Object.fromEntries(
        events.items
          .slice(from)
          .filter((x) => x.item.type === "edit" && x.item.id === end.item.id)
          .map((x) => [x.item.phase, x.item]),
      );
      const triton = await tritonLoad(logF, phases.staged?.at ?? savedAt, 5_000, logFrom);
      const out = await infer(up.baseUrl, MODEL).catch((err) => (console.error(`bench: ${String(err)}`), prev));
      const changed = !sameOutput(out, prev);
      prev = out;
      const firstEventAt = phases.saved ? phases.saved.at - phases.saved.sinceSavedMs : undefined;
      samples.push({
        k,
        outcome: end.item.phase,
        latencyMs: end.item.at - savedAt,
        timelineMs: end.item.sinceSavedMs,
        changed,
        notice: firstEventAt !== undefined ? firstEventAt - savedAt : undefined,
        settle: phases.saved?.sinceSavedMs,
        validate: phases.validated && phases.saved ? phases.validated.at - phases.saved.at : undefined,
        stage: phases.staged && phases.validated ? phases.staged.at - phases.validated.at : undefined,
        pollWait: triton && phases.staged ? triton.loadingAt - phases.staged.at : undefined,
        tritonLoad: triton ? triton.doneAt - triton.loadingAt : undefined,
        observe: triton && phases.ready ? phases.ready.at - triton.doneAt : undefined,
      });
      process.stderr.write(`\r${label}: ${k}/${EDITS} (${end.item.phase}, ${end.item.at - savedAt} ms)   `);
    }
    process.stderr.write("\n");
  } finally {
    await up.stop();
  }
  return { label, mode, pollSecs, samples };
}

async function measureRaw(pollSecs, edits, environment) {
  const label = `raw tritonserver poll (${pollSecs} s)`;
  console.error(`bench: ${label}: starting ...`);
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-bench-raw-"));
  const repository = path.join(dir, "models");
  await copyModels(repository, [MODEL]);
  const logFile = path.join(dir, "tritonserver.log");
  const raw = await startRawTriton({ environment, repository, pollSecs, logFile });
  const samples = [];
  try {
    const editor = new ModelEditor(repository, MODEL, STYLE);
    const logF = new LineFollower(logFile, { fromEnd: true });
    let prev = await infer(raw.baseUrl, MODEL);
    for (let k = 1; k <= edits; k++) {
      await sleep(GAP_MS + random() * pollSecs * 1000);
      logF.poll();
      const from = logF.items.length;
      const savedAt = await editor.save(k);
      const load = await tritonLoad(logF, savedAt, 2 * pollSecs * 1000 + 60_000, from);
      if (!load) {
        samples.push({ k, outcome: "missed" });
        console.error(`\nbench: ${label}: edit ${k} was not loaded within ${2 * pollSecs + 60} s`);
        continue;
      }
      const out = await infer(raw.baseUrl, MODEL).catch((err) => (console.error(`bench: ${String(err)}`), prev));
      const changed = !sameOutput(out, prev);
      prev = out;
      samples.push({
        k,
        outcome: load.ok ? "ready" : "failed",
        latencyMs: load.doneAt - savedAt,
        changed,
        pollWait: load.loadingAt - savedAt,
        tritonLoad: load.doneAt - load.loadingAt,
      });
      process.stderr.write(`\r${label}: ${k}/${edits} (${load.doneAt - savedAt} ms)   `);
    }
    process.stderr.write("\n");
    // Loads Triton started on its own: after each load the stub writes __pycache__ into the
    // watched folder, which the next poll takes for a change.
    const loads = fs
      .readFileSync(logFile, "utf8")
      .split("\n")
      .filter((l) => l.includes(`loading: ${MODEL}:`)).length;
    return { label, mode: "raw", pollSecs, samples, loads };
  } finally {
    await raw.stop();
    await fsp.rm(dir, { recursive: true, force: true });
  }
}

function summarise(r) {
  const ok = r.samples.filter((s) => s.outcome === "ready");
  const lat = ok.map((s) => s.latencyMs);
  return {
    ...r,
    n: r.samples.length,
    ok: ok.length,
    p50: percentile(lat, 50),
    p95: percentile(lat, 95),
    max: Math.max(...lat),
    changed: ok.filter((s) => s.changed).length,
    timelineP95: percentile(
      ok.map((s) => s.timelineMs).filter((x) => x !== undefined),
      95,
    ),
  };
}

const environment = readEnvironment();
const seeded = new ModelEditor(path.join(path.dirname(new URL(import.meta.url).pathname), "..", "models"), MODEL)
  .seeded;
console.error(
  `bench: ${EDITS} saves (${STYLE}) of ${MODEL}/1/model.py${seeded ? " (a new SEED each: the output must change)" : " (a changed comment)"}`,
);
const results = [];
results.push(summarise(await measureOurs("explicit")));
results.push(summarise(await measureOurs("poll", 1)));
if (!NO_RAW) {
  results.push(summarise(await measureRaw(1, EDITS, environment)));
  if (RAW15_EDITS > 0) results.push(summarise(await measureRaw(15, RAW15_EDITS, environment)));
}

const goal = (r) => (r.mode === "explicit" ? 1000 : r.mode === "poll" ? (r.pollSecs + 1) * 1000 : undefined);
console.log(
  `\nsave -> READY, ${MODEL}/1/model.py, ${STYLE} saves (ms; "served" = requests after READY that saw the edit's output)`,
);
console.log(
  table([
    ["", "saves", "READY", "p50", "p95", "max", "served", "goal (p95)", ""],
    ...results.map((r) => {
      const g = goal(r);
      return [
        r.label,
        r.n,
        r.ok,
        fmt(r.p50, 0),
        fmt(r.p95, 0),
        fmt(r.max, 0),
        seeded ? `${r.changed}/${r.ok}` : "-",
        g ? `<= ${g}` : "",
        g ? (r.p95 <= g && r.ok === r.n ? "met" : "MISSED") : "",
      ];
    }),
  ]),
);
const raws = results.filter((r) => r.mode === "raw");
const ours = results.filter((r) => r.mode !== "raw");
if (raws.length) {
  console.log("\nratios, triton-dev / raw Triton (below 1: triton-dev is faster)");
  console.log(
    table([
      ["", ...raws.flatMap((r) => [`p50 vs ${r.label.replace("raw tritonserver ", "raw ")}`, "p95"])],
      ...ours.map((o) => [o.label, ...raws.flatMap((r) => [`${fmt(o.p50 / r.p50, 2)}x`, `${fmt(o.p95 / r.p95, 2)}x`])]),
    ]),
  );
  for (const r of raws)
    console.log(
      `${r.label}: Triton loaded ${MODEL} ${r.loads} times for ${r.n} saves (the stub's __pycache__ in the watched folder is taken for a change)`,
    );
}
console.log(
  "\nwhere the time goes (mean ms per save): watcher notice, settle window, lint, stage (hash + copy [+ precompile in poll mode]), until Triton starts loading (explicit: the load request; poll: the wait for its poll), Triton's load (loading: -> successfully loaded), READY seen after it",
);
const m = (r, k) => fmt(mean(r.samples.map((s) => s[k]).filter((x) => typeof x === "number")), 0);
console.log(
  table([
    ["", "notice", "settle", "lint", "stage", "to Triton", "Triton load", "observe", "total p50"],
    ...results.map((r) => [
      r.label,
      m(r, "notice"),
      m(r, "settle"),
      m(r, "validate"),
      m(r, "stage"),
      m(r, "pollWait"),
      m(r, "tritonLoad"),
      m(r, "observe"),
      fmt(r.p50, 0),
    ]),
  ]),
);
if (OUT) {
  await fsp.writeFile(
    OUT,
    JSON.stringify({ model: MODEL, edits: EDITS, style: STYLE, at: new Date().toISOString(), results }, null, 2),
  );
  console.error(`bench: samples written to ${OUT}`);
}
