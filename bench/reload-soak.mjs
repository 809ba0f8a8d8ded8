// Hot-reload soak, bounded: N saves (default 500) to a sample python model within 5 minutes,
// valid and invalid mixed, through a detached `triton-dev up`; then checks that what is served
// is the last save's, and that nothing grew: open files of our watcher and of Triton
// (/proc/PID/fd), processes under them, and python-backend stub processes. Before/after printed.
//
//   npm run build && TRITON_DEV_HOME=... node bench/reload-soak.mjs \
//     [--reload poll|explicit] [--edits 500] [--seconds 240] [--model image_classifier]
//
// Saves come every --seconds/--edits (480 ms by default), faster than a reload in poll mode, so
// the controller also coalesces. Every 10th save is a model.py that raises at import and every
// 25th a config.pbtxt that lint refuses (fixed again by the next save); the last save is valid.
// What the last save must serve is computed first: save 500's content is loaded once before the
// soak and its output to a fixed request kept.
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { table } from "./lib.mjs";
import {
  LineFollower,
  ModelEditor,
  arg,
  descendants,
  infer,
  openFds,
  processes,
  sameOutput,
  sleep,
  startUp,
} from "./reload-lib.mjs";

const MODE = arg("--reload", "poll");
const EDITS = arg("--edits", 500);
const SECONDS = arg("--seconds", 240);
const MODEL = arg("--model", "image_classifier");
const BOUND_MS = 5 * 60_000;
const STUB = "triton_python_backend_stub";

function snapshot(label, tritonPid, supervisorPid) {
  const all = processes();
  const under = [...descendants(tritonPid, all), ...(supervisorPid ? descendants(supervisorPid, all) : [])];
  return {
    label,
    tritonFds: openFds(tritonPid),
    oursFds: supervisorPid ? openFds(supervisorPid) : NaN,
    processes: under.length + 1 + (supervisorPid ? 1 : 0),
    stubs: under.filter((p) => p.cmd.includes(STUB)).length,
    stubsOfModel: under.filter((p) => p.cmd.includes(STUB) && p.cmd.includes(`/${MODEL}/`)).length,
    fdTargets: fdTargets(tritonPid),
  };
}

function fdTargets(pid) {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).map((fd) => {
      try {
        return fs.readlinkSync(`/proc/${pid}/fd/${fd}`).replace(/\d+/g, "N");
      } catch {
        return "?";
      }
    });
  } catch {
    return [];
  }
}

/** Wait until the controller has nothing left: the last edit event is an outcome and 3 s passed quietly. */
async function quiet(events, timeoutMs) {
  const outcomes = new Set(["ready", "failed", "refused", "unchanged", "unloaded"]);
  const deadline = Date.now() + timeoutMs;
  let last = -1;
  let since = Date.now();
  while (Date.now() < deadline) {
    events.poll();
    if (events.items.length !== last) {
      last = events.items.length;
      since = Date.now();
    }
    const edits = events.items.filter((x) => x.item.type === "edit" && x.item.model === MODEL);
    const tail = edits[edits.length - 1];
    if ((!tail || outcomes.has(tail.item.phase)) && Date.now() - since >= 3_000) return tail?.item;
    await sleep(100);
  }
  return undefined;
}

const started = Date.now();
console.error(`bench: soak, ${EDITS} saves of ${MODEL} in ${SECONDS} s, --reload ${MODE} ...`);
const up = await startUp({ mode: MODE, pollSecs: 1 });
let failed;
try {
  const editor = new ModelEditor(up.modelsDir, MODEL, "rename");
  if (!editor.seeded) throw new Error(`bench: ${MODEL} has no SEED line to vary`);
  const configFile = path.join(up.modelsDir, MODEL, "config.pbtxt");
  const config = await fsp.readFile(configFile, "utf8");
  const events = new LineFollower(up.eventsFile, { parse: JSON.parse });
  const run = JSON.parse(await fsp.readFile(path.join(up.stateDir, "run.json"), "utf8"));
  const tritonPid = run.pid;
  const supervisorPid = run.supervisorPid;

  // The output the last save must serve, from loading its content once.
  const wait = async (pred, ms = 90_000) => {
    events.poll();
    return events.waitFor((e) => e.type === "edit" && e.model === MODEL && pred(e), ms, events.items.length);
  };
  let ready = wait((e) => e.phase === "ready");
  await editor.save(EDITS);
  if (!(await ready)) throw new Error("bench: the reference save did not load");
  const expected = await infer(up.baseUrl, MODEL);
  ready = wait((e) => e.phase === "ready");
  await editor.save(0);
  if (!(await ready)) throw new Error("bench: the original model did not load again");
  const original = await infer(up.baseUrl, MODEL);
  if (sameOutput(original, expected))
    throw new Error("bench: the reference save serves what the original does; no way to tell them apart");
  await quiet(events, 30_000);
  const before = snapshot("before", tritonPid, supervisorPid);

  const interval = (SECONDS * 1000) / EDITS;
  // The bound covers the saves and the wait for the last one to be served.
  const t0 = Date.now();
  let saves = 0;
  let brokenConfig = false;
  const fixConfig = async () => {
    if (!brokenConfig) return;
    await fsp.writeFile(configFile, config);
    brokenConfig = false;
  };
  for (let k = 1; k < EDITS; k++) {
    if (Date.now() - t0 > BOUND_MS - 60_000) {
      console.error(`\nbench: stopping the saves at ${k - 1}: the soak is bounded to 5 minutes`);
      break;
    }
    await fixConfig();
    if (k % 25 === 0) {
      // max_batch_size: -1 is refused by lint; the model.py save below is then refused too.
      await fsp.writeFile(configFile, config.replace(/max_batch_size: \d+/, "max_batch_size: -1"));
      brokenConfig = true;
    }
    await editor.save(k, { broken: k % 10 === 0 });
    saves++;
    if (k % 20 === 0) process.stderr.write(`\rsaves: ${k}/${EDITS}   `);
    await sleep(Math.max(0, t0 + k * interval - Date.now()));
  }
  // The last save is always save EDITS, valid, whose output was computed before.
  await fixConfig();
  await editor.save(EDITS);
  saves++;
  const savesMs = Date.now() - t0;
  process.stderr.write("\n");
  const tail = await quiet(events, Math.max(10_000, BOUND_MS - (Date.now() - t0)));
  const served = await infer(up.baseUrl, MODEL);
  await sleep(3_000);
  const after = snapshot("after", tritonPid, supervisorPid);
  const soakMs = (tail?.at ?? Date.now()) - t0;
  const totalMs = Date.now() - started;

  const edits = events.items.map((x) => x.item).filter((e) => e.type === "edit" && e.model === MODEL);
  const count = (p) => edits.filter((e) => e.phase === p).length;
  console.log(
    `\nsoak: ${saves} saves of ${MODEL} in ${(savesMs / 1000).toFixed(0)} s (--reload ${MODE}); last one served after ${(soakMs / 1000).toFixed(0)} s, bounded to ${BOUND_MS / 1000} s (${(totalMs / 1000).toFixed(0)} s with the server's start)`,
  );
  console.log(
    `timeline: ${count("saved")} settled changes -> ${count("ready")} ready, ${count("failed")} failed (last good kept), ${count("refused")} refused, ${count("unchanged")} unchanged`,
  );
  const finalOk = sameOutput(served, expected) && tail?.phase === "ready";
  console.log(
    `final state: ${finalOk ? "the last save is served" : "NOT the last save"} (last timeline outcome: ${tail?.phase ?? "none"})`,
  );
  const rows = [
    ["", "our watcher fds", "Triton fds", "processes", "python stubs", `stubs of ${MODEL}`],
    ...[before, after].map((s) => [s.label, s.oursFds, s.tritonFds, s.processes, s.stubs, s.stubsOfModel]),
  ];
  rows.push([
    "growth",
    after.oursFds - before.oursFds,
    after.tritonFds - before.tritonFds,
    after.processes - before.processes,
    after.stubs - before.stubs,
    after.stubsOfModel - before.stubsOfModel,
  ]);
  console.log(table(rows));
  const grew =
    after.oursFds > before.oursFds ||
    after.tritonFds > before.tritonFds ||
    after.processes > before.processes ||
    after.stubs > before.stubs;
  if (after.tritonFds > before.tritonFds) {
    const count = (xs) => xs.reduce((m, x) => m.set(x, (m.get(x) ?? 0) + 1), new Map());
    const b = count(before.fdTargets);
    for (const [t, n] of count(after.fdTargets))
      if (n > (b.get(t) ?? 0)) console.log(`  Triton fd growth: ${t} x${n - (b.get(t) ?? 0)}`);
  }
  console.log(`resources: ${grew ? "GREW" : "no growth"}; within bound: ${soakMs <= BOUND_MS ? "yes" : "NO"}`);
  failed = !finalOk || grew || soakMs > BOUND_MS;
} finally {
  await up.stop();
}
process.exitCode = failed ? 1 : 0;
