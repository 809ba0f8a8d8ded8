#!/usr/bin/env node
// Benchmark: the kind runtime (`up --runtime kind`) on a REAL kind cluster, beside the local runtime
// on the same sample models, in one run. The kind pieces are those of
// test/integration/kind-real.test.ts: the kind v0.33.0 CLI and a node image built on this machine by
// test/fixtures/kind-node/build.sh (cached), kubectl of test/fixtures/k8s-control-plane, and the
// Triton test image (test/fixtures/docker) that `up` pulls from a registry on 127.0.0.1 (`--image`).
//
// For each runtime, on its own copy of the sample models, its own state folder and free ports:
//   up --detach to every model READY, cold (kind: a new two-node cluster, `--node-image`,
//   `--keep-cluster`; local: the first run with this state folder), then `down`, then warm (a second
//   up; kind: the kept cluster is reused); a new model (`offset`) saved to served, and N edits saved
//   to each edited version served; `down`. At the end the kept cluster is deleted with kind and no
//   container labelled io.x-k8s.kind.cluster=<name> may be left. One server runs at a time; the
//   table shows both runtimes and the ratio kind / local. Exits 1 naming the step that failed, 2
//   when the daemon cannot run kind nodes; everything started is stopped at the end, failure or not.
//
//   npm run build && DOCKER_HOST=... TRITON_DEV_HOME=... node bench/kind.mjs [--edits 4]
//     [--deadline-min 30] [--out FILE.json]
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { CLI, fmt, importTs, requireBuild, run, table } from "./lib.mjs";
import { arg, copyModels, freePorts, readEnvironment } from "./reload-lib.mjs";
import { lastLines, log, median, offsetEdits, row, secs, stepper } from "./side-by-side.mjs";

const EDITS = arg("--edits", 4);
const DEADLINE_MIN = arg("--deadline-min", 30);
const OUT = arg("--out", undefined);
const LABEL = "io.x-k8s.kind.cluster";
const CLUSTER = `tdkb-${Math.random().toString(36).slice(2, 7)}`;
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
  `export { buildTestImage, dockerAvailability, LocalRegistry, removeImage } from "./test/fixtures/docker/harness.js";
export { kindNode, privilegedBlocker } from "./test/fixtures/kind-node/harness.js";
export { writeOffsetModel, untilOffsetServes, OFFSET_MODEL } from "./test/helpers/offset-model.js";
export { findProcesses } from "./src/state/process.js";
`,
  "kind-harness",
);

const avail = await h.dockerAvailability();
if (!avail.ok) {
  console.error(`bench: ${avail.reason}`);
  process.exit(2);
}
const docker = avail.docker;
const blocker = await h.privilegedBlocker(await docker.info());
if (blocker) {
  console.error(`bench: kind nodes cannot run on this daemon: ${blocker}`);
  process.exit(2);
}

const clusterContainers = () =>
  docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${LABEL}=${CLUSTER}`] }) });
const ourKubectls = () => h.findProcesses((argv) => argv.includes(`--context=kind-${CLUSTER}`));

const step = stepper(diagnose);

async function diagnose(side) {
  const parts = [];
  const st = await cli(side, ["status", "--json"], 60_000);
  try {
    const status = JSON.parse(st.stdout);
    parts.push(`models: ${(status.models ?? []).map((m) => `${m.name}=${m.state}`).join(", ")}`);
    if (status.logFile) {
      const text = await fsp.readFile(status.logFile, "utf8").catch(() => "");
      parts.push(`Triton's log, last lines:\n${lastLines(text, 30)}`);
      const sup = await fsp.readFile(path.join(path.dirname(status.logFile), "supervisor.log"), "utf8").catch(() => "");
      parts.push(`supervisor.log, last lines:\n${lastLines(sup, 15)}`);
    }
  } catch {
    parts.push(`status --json: exit ${st.code}: ${lastLines(st.stderr, 5)}`);
  }
  if (side.name === "kind" && side.kubectl) {
    const k = (args) => run(side.kubectl, [`--context=kind-${CLUSTER}`, ...args], side.env, 60_000);
    const pods = await k(["get", "pods", "--all-namespaces", "-o", "wide"]);
    parts.push(`pods:\n${(pods.stdout + pods.stderr).trim()}`);
    const events = await k(["-n", "triton-dev", "get", "events", "--sort-by=.lastTimestamp"]);
    parts.push(`events:\n${lastLines(events.stdout || events.stderr, 20)}`);
  }
  return `\n--- ${side.name} run at the failure ---\n${parts.join("\n")}`;
}

// --- what is started, and its teardown (idempotent, also on a signal or the deadline) ------------
const started = { registry: undefined, node: undefined, image: undefined, sides: [], dirs: [] };
const cleanupNotes = [];
let cleaning;
function cleanup() {
  cleaning ??= (async () => {
    for (const s of started.sides) {
      const r = await run(process.execPath, [CLI, "down"], s.env, 240_000);
      if (r.code !== 0) log(`cleanup: ${s.name} down exited ${r.code}: ${lastLines(r.stderr, 3)}`);
    }
    if (started.node) {
      const kindSide = started.sides.find((s) => s.name === "kind");
      const r = await run(started.node.kind, ["delete", "cluster", `--name=${CLUSTER}`], kindSide?.env ?? process.env);
      if (r.code !== 0) log(`cleanup: kind delete cluster exited ${r.code}: ${lastLines(r.stderr, 3)}`);
      for (const c of await clusterContainers().catch(() => [])) {
        cleanupNotes.push(`container ${c.Names[0]} left after kind delete: removed by force`);
        await docker
          .getContainer(c.Id)
          .remove({ force: true, v: true })
          .catch(() => {});
      }
    }
    if (started.registry) {
      const config = started.registry.child?.spawnargs?.at(-1);
      await started.registry.stop().catch((e) => log(`cleanup: registry stop: ${e.message}`));
      if (config && path.basename(path.dirname(config)).startsWith("triton-dev-registry-"))
        started.dirs.push(path.dirname(config));
    }
    // The tag `up` pulled names this run's registry port: useless once the registry is gone.
    if (started.image) await h.removeImage(docker, started.image).catch(() => {});
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
async function makeSide(name, extraEnv, upArgs, coldArgs = []) {
  const stateDir = await fsp.mkdtemp(path.join(os.tmpdir(), `triton-dev-bench-kind-${name}-`));
  started.dirs.push(stateDir);
  const models = path.join(stateDir, "models");
  await copyModels(models);
  const side = {
    name,
    models,
    ports: await freePorts(),
    env: { ...process.env, TRITON_DEV_STATE_DIR: stateDir, TRITON_DEV_LOG: "warn", CI: "1", ...extraEnv },
    upArgs,
    coldArgs,
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
          ...(which === "cold" ? side.coldArgs : []),
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
        600_000,
      );
      const s = secs(Date.now() - t0);
      if (r.code !== 0) throw new Error(`exit ${r.code} after ${fmt(s)} s:\n${lastLines(r.stderr)}`);
      const events = r.stdout
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l));
      const states = (events.find((e) => e.type === "ready")?.models ?? []).map((m) => `${m.name}=${m.state}`);
      if (SAMPLE_READY.some((m) => !states.includes(`${m}=READY`)))
        throw new Error(`not every sample model READY: ${states.join(", ") || "no ready event"}`);
      if (side.name === "kind") {
        const steps = events.filter((e) => e.type === "progress" && e.runtime === "kind").map((e) => e.message);
        const how = steps.find((m) => /^(creating|using) the kind cluster/.test(m));
        log(`kind: ${how ?? "(no cluster step reported)"}; its steps: ${steps.join(" | ")}`);
        if (which === "cold" && !how?.startsWith("creating")) throw new Error(`the cold up did not create ${CLUSTER}`);
        if (which === "warm" && !how?.startsWith("using")) throw new Error(`the warm up did not reuse ${CLUSTER}`);
        side.figures[`pulled_${which}`] = events.some((e) => e.type === "pull");
        const argv0s = ourKubectls().map((pid) => {
          try {
            return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").slice(0, 2).join(" ");
          } catch {
            return `${pid} (gone)`;
          }
        });
        log(`kind: kubectl processes of the run after up: ${argv0s.length} (${argv0s.join("; ")})`);
      }
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
      const r = await cli(side, ["down"], 240_000);
      const s = secs(Date.now() - t0);
      if (r.code !== 0) throw new Error(`exit ${r.code}: ${lastLines(r.stderr)}`);
      if (side.name === "kind") {
        log(`kind: down said: ${r.stdout.trim().split("\n")[0]}`);
        await new Promise((res) => setTimeout(res, 500));
        const left = ourKubectls();
        if (left.length) throw new Error(`kubectl processes of the run left after down: ${left.join(", ")}`);
        const nodes = await clusterContainers();
        if (nodes.length !== 2)
          throw new Error(`the kept cluster has ${nodes.length} node containers after down, not 2`);
      }
      log(`${side.name}: down (${which}) ${fmt(s)} s`);
      return s;
    },
    side,
  );
}

// --- the run -----------------------------------------------------------------------------------
const t00 = Date.now();
const setup = {};
let failed;
let local;
let kind;
try {
  const [node, testImage] = await step("setup: kind node image, kind, test image (cached)", async () => {
    const t0 = Date.now();
    const b = await Promise.all([h.kindNode(), h.buildTestImage()]);
    setup.buildsS = secs(Date.now() - t0);
    return b;
  });
  started.node = node;
  const image = await step("setup: registry", async () => {
    started.registry = new h.LocalRegistry();
    await started.registry.start(testImage.registryDir);
    return started.registry.ref(testImage);
  });
  started.image = image;
  log(`builds ${fmt(setup.buildsS)} s; node image ${node.image}; cluster ${CLUSTER}; image ${image}`);
  const home = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-bench-kind-home-"));
  started.dirs.push(home);

  local = await makeSide("local", {}, ["--runtime", "local"]);
  kind = await makeSide(
    "kind",
    {
      PATH: `${path.dirname(node.kind)}${path.delimiter}${path.dirname(node.kubectl)}${path.delimiter}${process.env.PATH}`,
      // kind writes the cluster's context here, not into the user's ~/.kube/config.
      KUBECONFIG: path.join(home, "kubeconfig"),
    },
    ["--runtime", "kind", "--cluster", CLUSTER, "--image", image],
    ["--node-image", node.image, "--keep-cluster"],
  );
  kind.kubectl = node.kubectl;

  // Alternating: one server at a time, each phase of one runtime next to the same phase of the other.
  const sides = [local, kind];
  for (const s of sides) s.figures.upCold = await up(s, "cold");
  for (const s of sides) s.figures.downAfterCold = await down(s, "after the cold up");
  for (const s of sides) {
    s.figures.upWarm = await up(s, "warm");
    Object.assign(s.figures, await offsetEdits(s, { offset: h, step, count: EDITS }));
    s.figures.downEnd = await down(s, "at the end");
  }
  kind.figures.deleteCluster = await step("kind: kind delete cluster (the kept one)", async () => {
    const t0 = Date.now();
    const r = await run(node.kind, ["delete", "cluster", `--name=${CLUSTER}`], kind.env, 240_000);
    const s = secs(Date.now() - t0);
    if (r.code !== 0) throw new Error(`exit ${r.code}: ${lastLines(r.stderr)}`);
    const left = await clusterContainers();
    if (left.length) throw new Error(`containers labelled ${LABEL}=${CLUSTER} left: ${left.map((c) => c.Names[0])}`);
    log(`kind: cluster deleted in ${fmt(s)} s; no container labelled ${LABEL}=${CLUSTER} left`);
    return s;
  });
} catch (err) {
  failed = err;
} finally {
  await cleanup();
  clearTimeout(watchdog);
}
const leftContainers = await clusterContainers().catch((e) => [{ Names: [`(cannot list: ${e.message})`] }]);

// --- the report --------------------------------------------------------------------------------
const L = local?.figures ?? {};
const K = kind?.figures ?? {};
const rows = [
  ["", "local", "kind", "kind/local"],
  row("up --detach to every model READY, cold (s)", L.upCold, K.upCold),
  row("down after the cold up (s)", L.downAfterCold, K.downAfterCold),
  row("up --detach to every model READY, warm (s)", L.upWarm, K.upWarm),
  row("new model saved to served (s)", L.newModel, K.newModel),
  row(`edit saved to edited version served, median of ${EDITS} (s)`, median(L.edits ?? []), median(K.edits ?? [])),
  [
    "  edits, each (s)",
    (L.edits ?? []).map((x) => fmt(x)).join(" ") || "-",
    (K.edits ?? []).map((x) => fmt(x)).join(" ") || "-",
    "",
  ],
  row("down at the end (s)", L.downEnd, K.downEnd),
  ["kind delete cluster, the kept one (s)", "", fmt(K.deleteCluster), ""],
];
console.log(
  `kind runtime on a real kind cluster (two nodes, node image of test/fixtures/kind-node) beside the local runtime, ` +
    `same sample models; cluster ${CLUSTER}; setup: builds ${fmt(setup.buildsS)} s; ` +
    `image pulled by up: cold ${K.pulled_cold ?? "-"}, warm ${K.pulled_warm ?? "-"}; ` +
    `whole run ${fmt(secs(Date.now() - t00))} s; load average ${os
      .loadavg()
      .map((x) => fmt(x, 2))
      .join(" ")} on ${os.availableParallelism()} cores`,
);
console.log(table(rows));
for (const n of cleanupNotes) console.log(`cleanup: ${n}`);
console.log(
  leftContainers.length
    ? `LEFT: containers labelled ${LABEL}=${CLUSTER}: ${leftContainers.map((c) => c.Names[0]).join(", ")}`
    : `no container labelled ${LABEL}=${CLUSTER} left`,
);
if (OUT)
  await fsp.writeFile(
    OUT,
    JSON.stringify({ date: new Date().toISOString(), cluster: CLUSTER, setup, local: L, kind: K }, null, 2),
  );
const leftover = ourKubectls();
if (leftover.length) console.error(`bench: kubectl processes of the runs still running: ${leftover.join(", ")}`);
if (failed) {
  console.error(`bench: FAILED at step ${failed.message}`);
  process.exit(1);
}
if (leftContainers.length) process.exit(1);
