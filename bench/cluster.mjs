#!/usr/bin/env node
// Benchmark: the cluster runtime (`up --runtime cluster --context NAME --namespace NS`) on a real
// Kubernetes, beside the local runtime on the same model repository, in one run. The cluster is the
// one test/integration/cluster-node.test.ts runs against: the control plane of
// test/fixtures/k8s-control-plane (etcd, kube-apiserver, controller manager, scheduler) and one node
// of test/fixtures/k8s-node (kubelet, containerd 2, runc), reached with a ServiceAccount token that
// holds only the README's Role; the node pulls the test image (the NGC-layout stand-in of
// test/fixtures/docker) from a registry on 127.0.0.1.
//
// For each runtime, on its own copy of the sample models, its own state folder and free ports:
//   up --detach to every model READY, cold (cluster: the node pulls the image; local: the first
//   run with this state folder), then `down`, then warm (a second up); a new model saved to it
//   served, and N edits saved to each edited version served (the integration test's `offset`
//   model: version 1 adds K, each edit changes K); `triton-dev perf bert_tokenizer` through the
//   run's endpoints (cluster: kubectl port-forward) at concurrency 1 and 4; a short
//   `triton-dev tune offset` (2 candidates, a 60 s budget) as a functional check; `down`.
// The phases alternate between the runtimes (only one server runs at a time), and the table shows
// both runtimes' figures with the ratio cluster / local. Exits 1 naming the step that failed;
// everything started (runs, node, control plane, registry) is stopped at the end, failure or not.
//
//   npm run build && TRITON_DEV_HOME=... node bench/cluster.mjs [--edits 4] [--window 2000]
//     [--trials 4] [--tune-budget 60s] [--deadline-min 45] [--out FILE.json]
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { CLI, fmt, importTs, requireBuild, run, table } from "./lib.mjs";
import { arg, copyModels, freePorts, readEnvironment } from "./reload-lib.mjs";
import { lastLines, log, median, offsetEdits, ratio, row, secs, stepper } from "./side-by-side.mjs";

const EDITS = arg("--edits", 4);
const WINDOW_MS = arg("--window", 2000);
const TRIALS = arg("--trials", 4);
const TUNE_BUDGET = arg("--tune-budget", "60s");
const DEADLINE_MIN = arg("--deadline-min", 45);
const OUT = arg("--out", undefined);
const ONLY = arg("--only", undefined);
const CONTEXT = "bench";
const NS = "models";
const PERF_MODEL = "bert_tokenizer";
const PERF_LEVELS = [1, 4];
const SAMPLE_READY = [
  "bert_tokenizer",
  "image_classifier",
  "sentiment_classifier",
  "sentiment_pipeline",
  "text_streamer",
];

requireBuild();
readEnvironment();

const h = await importTs(
  `export { buildControlPlane, controlPlaneAvailability, serviceAccountWith, startControlPlane } from "./test/fixtures/k8s-control-plane/harness.js";
export { buildNode, nodeAvailability, startNode } from "./test/fixtures/k8s-node/harness.js";
export { buildTestImage, LocalRegistry } from "./test/fixtures/docker/harness.js";
export { writeOffsetModel, untilOffsetServes, OFFSET_MODEL } from "./test/helpers/offset-model.js";
export { REQUIRED_RIGHTS } from "./src/runtimes/cluster/settings.js";
export { ourKubectls } from "./src/runtimes/cluster/driver.js";
`,
  "cluster-harness",
);

for (const a of [h.controlPlaneAvailability(), h.nodeAvailability()])
  if (!a.ok) {
    console.error(`bench: a real node cannot run here: ${a.reason}`);
    process.exit(2);
  }

const step = stepper(diagnose);

async function diagnose(side) {
  const parts = [];
  const st = await cli(side, ["status", "--json"], 60_000);
  let status;
  try {
    status = JSON.parse(st.stdout);
  } catch {
    parts.push(`status --json: exit ${st.code}: ${lastLines(st.stderr, 5)}`);
  }
  if (status) {
    parts.push(
      `models: ${(status.models ?? []).map((m) => `${m.name}=${m.state}${m.reason ? ` (${m.reason})` : ""}`).join(", ")}`,
    );
    if (status.logFile) {
      const text = await fsp.readFile(status.logFile, "utf8").catch(() => "");
      // The whole log outlives the run's folder (removed at the end), for a closer look.
      const kept = path.join(os.tmpdir(), `triton-dev-bench-cluster-${side.name}-${process.pid}-tritonserver.log`);
      await fsp.writeFile(kept, text);
      parts.push(`Triton's log (whole: ${kept}), last lines:\n${lastLines(text, 40)}`);
      const runDir = path.dirname(status.logFile);
      const ls = await run("ls", ["-l", path.join(runDir, "repository"), path.join(runDir, "store")], process.env);
      parts.push(`the run's staging folder:\n${ls.stdout.trim()}`);
      for (const f of ["supervisor.log", "events.jsonl"]) {
        const t = await fsp.readFile(path.join(runDir, f), "utf8").catch(() => "");
        parts.push(`${f}, last lines:\n${lastLines(t, 20)}`);
      }
    }
  }
  if (side.name === "cluster" && started.cp) {
    const pods = await started.cp.kubectl([
      `--namespace=${NS}`,
      "get",
      "pods",
      '--output=jsonpath={range .items[*]}{.metadata.name} {range .status.containerStatuses[*]}{.name}:ready={.ready},restarts={.restartCount} {end}{"\\n"}{end}',
    ]);
    parts.push(`pods:\n${pods.stdout.trim() || pods.stderr.trim()}`);
    const pod = pods.stdout.trim().split("\n").pop()?.split(" ")[0];
    if (pod) {
      const inPod = await started.cp.kubectl([
        `--namespace=${NS}`,
        "exec",
        pod,
        "--container=triton",
        "--",
        "ls",
        "-l",
        "/models/repository",
        "/models/store",
      ]);
      parts.push(`in the pod:\n${(inPod.stdout + inPod.stderr).trim()}`);
    }
    const events = await started.cp.kubectl([`--namespace=${NS}`, "get", "events", "--sort-by=.lastTimestamp"]);
    parts.push(`events:\n${lastLines(events.stdout || events.stderr, 25)}`);
  }
  return `\n--- ${side.name} run at the failure ---\n${parts.join("\n")}`;
}

// --- what is started, and its teardown (idempotent, also on a signal or the deadline) ------------
const started = { registry: undefined, cp: undefined, node: undefined, sides: [], dirs: [] };
let cleaning;
function cleanup() {
  cleaning ??= (async () => {
    for (const s of started.sides) {
      const r = await run(process.execPath, [CLI, "down"], s.env, 180_000);
      if (r.code !== 0) log(`cleanup: ${s.name} down exited ${r.code}: ${lastLines(r.stderr, 3)}`);
    }
    if (started.node) await started.node.stop().catch((e) => log(`cleanup: node stop: ${e.message}`));
    if (started.cp) await started.cp.stop().catch((e) => log(`cleanup: control plane stop: ${e.message}`));
    if (started.registry) {
      // The harness leaves the registry's config folder (a temporary one) behind: removed here.
      const config = started.registry.child?.spawnargs?.at(-1);
      await started.registry.stop().catch((e) => log(`cleanup: registry stop: ${e.message}`));
      if (config && path.basename(path.dirname(config)).startsWith("triton-dev-registry-"))
        started.dirs.push(path.dirname(config));
    }
    for (const d of started.dirs) await fsp.rm(d, { recursive: true, force: true });
  })();
  return cleaning;
}
for (const sig of ["SIGINT", "SIGTERM"])
  process.once(sig, () => {
    log(`${sig}: stopping everything`);
    void cleanup().then(() => process.exit(130));
  });
const watchdog = setTimeout(() => {
  log(`the whole run passed --deadline-min ${DEADLINE_MIN}: stopping everything`);
  void cleanup().then(() => process.exit(1));
}, DEADLINE_MIN * 60_000);
watchdog.unref();

// --- one runtime's run -------------------------------------------------------------------------
async function makeSide(name, extraEnv, upArgs) {
  const stateDir = await fsp.mkdtemp(path.join(os.tmpdir(), `triton-dev-bench-cluster-${name}-`));
  started.dirs.push(stateDir);
  const models = path.join(stateDir, "models");
  await copyModels(models);
  const side = {
    name,
    models,
    ports: await freePorts(),
    env: { ...process.env, TRITON_DEV_STATE_DIR: stateDir, TRITON_DEV_LOG: "warn", CI: "1", ...extraEnv },
    upArgs,
    figures: {},
  };
  started.sides.push(side);
  return side;
}
const cli = (side, args, timeoutMs) => run(process.execPath, [CLI, ...args], side.env, timeoutMs);

async function up(side, which) {
  return step(
    `${side.name}: up --detach (${which})`,
    async () => {
      const p = side.ports;
      const t0 = Date.now();
      const r = await cli(
        side,
        [
          "up",
          ...side.upArgs,
          "--detach",
          "--json",
          "--models",
          side.models,
          "--timeout",
          "300",
          "--http-port",
          String(p.http),
          "--grpc-port",
          String(p.grpc),
          "--metrics-port",
          String(p.metrics),
        ],
        420_000,
      );
      const s = secs(Date.now() - t0);
      const nodeTails = side.name === "cluster" && started.node ? `\n${started.node.tails()}` : "";
      if (r.code !== 0) throw new Error(`exit ${r.code} after ${fmt(s)} s:\n${lastLines(r.stderr)}${nodeTails}`);
      const ready = r.stdout
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l))
        .find((e) => e.type === "ready");
      const states = (ready?.models ?? []).map((m) => `${m.name}=${m.state}`);
      const want = SAMPLE_READY.map((m) => `${m}=READY`);
      if (want.some((w) => !states.includes(w)))
        throw new Error(`not every sample model READY: ${states.join(", ") || "no ready event"}`);
      log(`${side.name}: up (${which}) ${fmt(s)} s`);
      return s;
    },
    side,
  );
}

async function down(side, which) {
  return step(
    `${side.name}: down (${which})`,
    async () => {
      const t0 = Date.now();
      const r = await cli(side, ["down"], 180_000);
      const s = secs(Date.now() - t0);
      if (r.code !== 0) throw new Error(`exit ${r.code}: ${lastLines(r.stderr)}`);
      if (side.name === "cluster") {
        const left = h.ourKubectls(CONTEXT, NS);
        if (left.length) throw new Error(`kubectl processes of the run left after down: ${left.join(", ")}`);
      }
      log(`${side.name}: down (${which}) ${fmt(s)} s`);
      return s;
    },
    side,
  );
}

async function perf(side) {
  return step(
    `${side.name}: perf ${PERF_MODEL} at concurrency ${PERF_LEVELS.join(",")}`,
    async () => {
      const args = [
        "perf",
        PERF_MODEL,
        "--concurrency-range",
        PERF_LEVELS.join(","),
        "-p",
        String(WINDOW_MS),
        "-r",
        String(TRIALS),
        "--json",
        "--no-history",
      ];
      // At most TRIALS windows per level, plus the warm-up: bounded well inside this.
      const r = await cli(side, args, 60_000 + PERF_LEVELS.length * TRIALS * WINDOW_MS * 2);
      if (r.code !== 0) throw new Error(`exit ${r.code}: ${lastLines(r.stderr)}`);
      const levels = JSON.parse(r.stdout).sweeps[0].levels;
      return levels.map((l) => ({
        concurrency: l.value,
        throughput: l.throughput,
        p50Ms: l.latency.p50Us / 1000,
        stable: l.stable,
      }));
    },
    side,
  );
}

async function tune(side, spaceFile) {
  return step(
    `${side.name}: tune offset (--budget ${TUNE_BUDGET})`,
    async () => {
      const t0 = Date.now();
      const r = await cli(
        side,
        [
          "tune",
          "offset",
          "--space",
          spaceFile,
          "--concurrency",
          "2",
          "--budget",
          TUNE_BUDGET,
          "--max-candidates",
          "3",
          "-p",
          "1000",
          "-r",
          "3",
          "--json",
          "--no-history",
        ],
        300_000,
      );
      const wall = secs(Date.now() - t0);
      let rep;
      try {
        rep = JSON.parse(r.stdout);
      } catch {
        rep = undefined;
      }
      if (r.code !== 0 || !rep)
        throw new Error(`exit ${r.code} after ${fmt(wall)} s: ${lastLines(r.stderr)}\n${r.stdout.slice(-2000)}`);
      const winner = rep.trials.find((t) => t.index === rep.winner);
      if (!winner)
        throw new Error(`completed in ${fmt(wall)} s without a winner: ${JSON.stringify(rep).slice(0, 600)}`);
      const out = {
        wall,
        searchS: secs(rep.elapsedMs),
        winner: winner.key,
        throughput: winner.measured?.throughput,
        candidates: rep.trials.length,
        verdict: rep.confirmation?.verdict ?? rep.notConfirmed ?? "-",
        ended: rep.ended,
        // Where its time went: an overrun of --budget shows in one of these.
        timing: rep.timing,
        trials: rep.trials.map((t) => ({
          key: t.key,
          status: t.status,
          why: t.why,
          elapsedS: secs(t.elapsedMs),
          phases: t.phases,
          throughput: t.measured?.throughput,
        })),
      };
      log(
        `${side.name}: tune's time: setup ${fmt(secs(rep.timing.setupMs))} s, ${out.trials
          .map(
            (t) =>
              `${t.key} ${t.status} ${fmt(t.elapsedS)} s${t.why ? ` (${t.why})` : ""}${t.phases ? ` [stage ${fmt(secs(t.phases.stageMs))}, load ${fmt(secs(t.phases.loadMs))}, previous gone ${fmt(secs(t.phases.previousMs))}, measure ${fmt(secs(t.phases.measureMs))}]` : ""}`,
          )
          .join(
            "; ",
          )}; confirmation ${fmt(secs(rep.timing.confirmMs))} s, cleanup ${fmt(secs(rep.timing.cleanupMs))} s`,
      );
      log(`${side.name}: tune ${fmt(wall)} s, winner ${out.winner} (${fmt(out.throughput)} infer/s), ${out.verdict}`);
      return out;
    },
    side,
  );
}

// --- the run -----------------------------------------------------------------------------------
const t00 = Date.now();
const setup = {};
let failed;
let local;
let cluster;
try {
  const [cpBuild, nodeBuild, testImage] = await step("setup: builds (cached by content hash)", async () => {
    const t0 = Date.now();
    const b = await Promise.all([h.buildControlPlane(), h.buildNode(), h.buildTestImage()]);
    setup.buildsS = secs(Date.now() - t0);
    return b;
  });
  const image = await step("setup: registry", async () => {
    started.registry = new h.LocalRegistry();
    await started.registry.start(testImage.registryDir);
    return started.registry.ref(testImage);
  });
  started.cp = await step("setup: control plane", async () => {
    const t0 = Date.now();
    const cp = await h.startControlPlane(cpBuild, { context: CONTEXT });
    setup.controlPlaneS = secs(Date.now() - t0);
    return cp;
  });
  const cp = started.cp;
  started.node = await step("setup: node", async () => {
    const t0 = Date.now();
    const node = await h.startNode(cp, nodeBuild, { registries: [`127.0.0.1:${started.registry.port}`] });
    setup.nodeS = secs(Date.now() - t0);
    return node;
  });
  const kubeconfig = await step("setup: namespace and ServiceAccount with the README's Role", async () => {
    await cp.ok(["create", "namespace", NS]);
    return h.serviceAccountWith(cp, NS, "triton-dev", h.REQUIRED_RIGHTS);
  });
  log(
    `builds ${fmt(setup.buildsS)} s, control plane ready ${fmt(setup.controlPlaneS)} s, node Ready ${fmt(setup.nodeS)} s`,
  );

  local = await makeSide("local", {}, ["--runtime", "local"]);
  cluster = await makeSide(
    "cluster",
    { PATH: `${cp.bin}${path.delimiter}${process.env.PATH}`, KUBECONFIG: kubeconfig },
    ["--runtime", "cluster", "--context", CONTEXT, "--namespace", NS, "--image", image],
  );
  const spaceFile = path.join(path.dirname(local.models), "tune-space.json");
  await fsp.writeFile(
    spaceFile,
    JSON.stringify({
      batching: [true],
      maxBatchSize: [8],
      preferredBatchSize: [[]],
      maxQueueDelayMicroseconds: [100],
      instances: [1, 2],
    }),
  );

  // Alternating: one server at a time, each phase of one runtime next to the same phase of the other.
  const sides = [local, cluster].filter((s) => !ONLY || s.name === ONLY);
  for (const s of sides) s.figures.upCold = await up(s, "cold");
  for (const s of sides) s.figures.downAfterCold = await down(s, "after the cold up");
  for (const s of sides) {
    s.figures.upWarm = await up(s, "warm");
    Object.assign(s.figures, await offsetEdits(s, { offset: h, step, count: EDITS }));
    s.figures.perf = await perf(s);
    s.figures.tune = await tune(s, spaceFile);
    s.figures.downEnd = await down(s, "at the end");
  }
} catch (err) {
  failed = err;
} finally {
  await cleanup();
  clearTimeout(watchdog);
}

// --- the report --------------------------------------------------------------------------------
const L = local?.figures ?? {};
const C = cluster?.figures ?? {};
const rows = [
  ["", "local", "cluster", "cluster/local"],
  row("up --detach to every model READY, cold (s)", L.upCold, C.upCold),
  row("down after the cold up (s)", L.downAfterCold, C.downAfterCold),
  row("up --detach to every model READY, warm (s)", L.upWarm, C.upWarm),
  row("new model saved to served (s)", L.newModel, C.newModel),
  row(`edit saved to edited version served, median of ${EDITS} (s)`, median(L.edits ?? []), median(C.edits ?? [])),
  [
    "  edits, each (s)",
    (L.edits ?? []).map((x) => fmt(x)).join(" ") || "-",
    (C.edits ?? []).map((x) => fmt(x)).join(" ") || "-",
    "",
  ],
];
for (const [i, c] of PERF_LEVELS.entries()) {
  const lp = L.perf?.[i];
  const cp = C.perf?.[i];
  const flagged = (p, x) => (p && !p.stable ? `${x}*` : x);
  rows.push([
    `perf ${PERF_MODEL} c=${c} throughput (infer/s)`,
    flagged(lp, fmt(lp?.throughput)),
    flagged(cp, fmt(cp?.throughput)),
    ratio(cp?.throughput, lp?.throughput),
  ]);
  rows.push([
    `perf ${PERF_MODEL} c=${c} p50 (ms)`,
    flagged(lp, fmt(lp?.p50Ms, 2)),
    flagged(cp, fmt(cp?.p50Ms, 2)),
    ratio(cp?.p50Ms, lp?.p50Ms),
  ]);
}
rows.push(row(`tune offset, wall (s), --budget ${TUNE_BUDGET}`, L.tune?.wall, C.tune?.wall));
rows.push(["  tune winner", L.tune?.winner ?? "-", C.tune?.winner ?? "-", ""]);
rows.push(row("  tune winner throughput (infer/s)", L.tune?.throughput, C.tune?.throughput));
rows.push(row("down at the end (s)", L.downEnd, C.downEnd));

console.log(
  `cluster runtime on a real node (kubelet, containerd 2, runc) beside the local runtime, same sample models; ` +
    `setup: builds ${fmt(setup.buildsS)} s, control plane ready ${fmt(setup.controlPlaneS)} s, node Ready ${fmt(setup.nodeS)} s; ` +
    `whole run ${fmt(secs(Date.now() - t00))} s; load average ${os
      .loadavg()
      .map((x) => fmt(x, 2))
      .join(" ")} on ${os.availableParallelism()} cores`,
);
console.log(table(rows));
if (PERF_LEVELS.some((_, i) => L.perf?.[i]?.stable === false || C.perf?.[i]?.stable === false))
  console.log(`* perf found no ${TRIALS} windows within its stability percentage: the last windows are shown`);
for (const [name, s] of [
  ["local", L.tune],
  ["cluster", C.tune],
])
  if (s && s.wall > 90) {
    const slow = [...s.trials].sort((a, b) => b.elapsedS - a.elapsedS)[0];
    const p = slow?.phases;
    console.log(
      `${name}: tune took ${fmt(s.wall)} s, more than about a minute, under --budget ${TUNE_BUDGET} (search ${fmt(s.searchS)} s, ended: ${s.ended}); ` +
        `its slowest candidate ${slow?.key} ${fmt(slow?.elapsedS)} s${p ? ` (stage ${fmt(secs(p.stageMs))}, load ${fmt(secs(p.loadMs))}, previous variant gone ${fmt(secs(p.previousMs))}, measure ${fmt(secs(p.measureMs))} s)` : ""}, ` +
        `confirmation ${fmt(secs(s.timing.confirmMs))} s, cleanup ${fmt(secs(s.timing.cleanupMs))} s`,
    );
  }
if (OUT)
  await fsp.writeFile(OUT, JSON.stringify({ date: new Date().toISOString(), setup, local: L, cluster: C }, null, 2));

const leftover = h.ourKubectls(CONTEXT, NS);
if (leftover.length) console.error(`bench: kubectl processes of the runs still running: ${leftover.join(", ")}`);
if (failed) {
  console.error(`bench: FAILED at step ${failed.message}`);
  process.exit(1);
}
