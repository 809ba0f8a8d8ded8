// The real-models figures on the local runtime: a requirements.txt environment built
// cold and found cached, save -> READY of a requirements.txt edit (to a new environment and back
// to a cached one), and `down` after the sequence of failed reloads, beside `down` after
// no edit at all.
//
//   npm run build && TRITON_DEV_HOME=... node bench/real-models.mjs [--rounds 3] [--out FILE.json]
//
// pip reads only a wheel folder made here (test/helpers/make-wheel.py, PIP_NO_INDEX), so no figure
// depends on a package index; environments go to a folder of the bench's own, so the first build of
// each requirements set is a cold one. The environment figures call the built EnvironmentBuilder
// (dist/envs/builder.js) as `up` does, a fresh builder each time, so each includes asking the
// stub's Python once for its version and pins. Each round is one detached `up` of add_sub
// (test/fixtures/requirements, with `tdgreet`) and a plain python model: a requirements.txt edit to
// a version not built yet, one back to a built one, then the sequence (a good edit, a broken edit,
// its fix, a broken model added, then deleted), each awaited in the run's edit timeline
// (events.jsonl), then a timed `down`.
import { spawn } from "node:child_process";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { CLI, ROOT, run } from "./lib.mjs";
import { LineFollower, arg, freePorts, readEnvironment } from "./reload-lib.mjs";

const ROUNDS = arg("--rounds", 3);
const OUT = arg("--out", undefined);
const FIXTURE = path.join(ROOT, "test/fixtures/requirements");
const PLAIN = path.join(ROOT, "test/fixtures/examples/misplaced/served");
const WHEEL_SCRIPT = path.join(ROOT, "test/helpers/make-wheel.py");
const END = new Set(["ready", "failed", "refused", "unchanged", "unloaded"]);

const environment = readEnvironment();
const python = environment.venvPython;
const work = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-bench-real-models-"));
const wheels = path.join(work, "wheels");
const envsDir = path.join(work, "envs");
const pipEnv = { PIP_NO_INDEX: "1", PIP_FIND_LINKS: wheels, PIP_CONFIG_FILE: "/dev/null" };
const figures = { coldBuildMs: [], cachedBuildMs: [], newEnvEditMs: [], cachedEnvEditMs: [], downAfterFailuresMs: [] };
/** Every round's environment, so a bench that fails midway still stops what it started. */
const started = [];
const s = (ms) => `${(ms / 1000).toFixed(2)} s`;

/** tdgreet at `version`, its greeting telling the versions apart. */
async function wheel(version) {
  const src = path.join(work, `tdgreet-${version}`);
  await fsp.cp(path.join(FIXTURE, "packages/tdgreet"), src, { recursive: true });
  const init = path.join(src, "tdgreet", "__init__.py");
  await fsp.writeFile(init, (await fsp.readFile(init, "utf8")).replace('"1.0"', `"${version}"`));
  const r = await runWithInput(python, [WHEEL_SCRIPT], {
    kind: "source",
    out: wheels,
    name: "tdgreet",
    version,
    source: src,
  });
  if (r.code !== 0) throw new Error(`bench: wheel tdgreet ${version}: ${r.stderr}`);
}

function runWithInput(file, args, input) {
  return new Promise((resolve) => {
    const child = spawn(file, args, { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(JSON.stringify(input));
  });
}

/** One environment built through a fresh builder, as a new `up` would: its time and whether it was cached. */
async function buildOnce(requirementsText, tag) {
  const { EnvironmentBuilder } = await import(path.join(path.dirname(CLI), "../envs/builder.js"));
  const file = path.join(work, `requirements-${tag}.txt`);
  await fsp.writeFile(file, requirementsText);
  const builder = new EnvironmentBuilder({
    root: envsDir,
    base: { python, sitePackages: environment.sitePackages },
    env: { ...process.env, ...pipEnv },
  });
  const started = Date.now();
  const built = await builder.build({ model: "add_sub", file, userFile: file });
  return { ms: Date.now() - started, cached: built.cached };
}

/** A detached up of add_sub and a plain python model; returns what a round needs. */
async function startRound(r) {
  const stateDir = path.join(work, `state-${r}`);
  const models = path.join(work, `models-${r}`);
  await fsp.cp(path.join(FIXTURE, "models/add_sub"), path.join(models, "add_sub"), { recursive: true });
  await fsp.cp(PLAIN, path.join(models, "plain"), { recursive: true });
  await fsp.writeFile(
    path.join(models, "plain/config.pbtxt"),
    (await fsp.readFile(path.join(models, "plain/config.pbtxt"), "utf8")).replace('"served"', '"plain"'),
  );
  const env = { ...process.env, ...pipEnv, TRITON_DEV_STATE_DIR: stateDir, TRITON_DEV_ENVS_DIR: envsDir, CI: "1" };
  started.push(env);
  const ports = await freePorts();
  const ports_ = ["--http-port", ports.http, "--grpc-port", ports.grpc, "--metrics-port", ports.metrics].map(String);
  const up = await run(
    process.execPath,
    [CLI, "up", "--detach", "--runtime", "local", "--models", models, ...ports_],
    env,
  );
  if (up.code !== 0) throw new Error(`bench: up failed: ${up.stdout}${up.stderr}`);
  const status = JSON.parse((await run(process.execPath, [CLI, "status", "--json"], env)).stdout);
  const events = new LineFollower(path.join(path.dirname(status.logFile), "events.jsonl"), { parse: JSON.parse });
  return { env, models, events };
}

/** Makes a change (a save, a new folder, a deletion), then awaits the model's edit outcome in the timeline. */
async function edit(round, model, change) {
  round.events.poll();
  const from = round.events.items.length;
  await change();
  const end = await round.events.waitFor(
    (e) => e.type === "edit" && e.model === model && END.has(e.phase),
    180_000,
    from,
  );
  if (!end) throw new Error(`bench: no outcome for an edit of ${model}`);
  return end.item;
}

/** An editor's save: written beside, renamed over. */
async function editorSave(file, content) {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.bench-tmp`);
  await fsp.writeFile(tmp, content);
  await fsp.rename(tmp, file);
}

async function timedDown(env) {
  const started = Date.now();
  const r = await run(process.execPath, [CLI, "down"], env);
  if (r.code !== 0) throw new Error(`bench: down failed: ${r.stderr}`);
  const waited = r.stderr.split("\n").filter((l) => l.startsWith("waiting for"));
  return { ms: Date.now() - started, waited };
}

try {
  await fsp.mkdir(wheels, { recursive: true });
  // Versions 1..ROUNDS for the builds, ROUNDS+1..2*ROUNDS for the edits (never built before theirs).
  for (let v = 1; v <= 2 * ROUNDS; v++) await wheel(`${v}.0`);

  for (let r = 0; r < ROUNDS; r++) {
    const text = `tdgreet==${r + 1}.0\n# cold round ${r}\n`;
    const cold = await buildOnce(text, `cold-${r}`);
    const cached = await buildOnce(text, `cached-${r}`);
    if (cold.cached || !cached.cached) throw new Error("bench: the cold build was cached, or the cached one was not");
    figures.coldBuildMs.push(cold.ms);
    figures.cachedBuildMs.push(cached.ms);
    console.log(`environment tdgreet==${r + 1}.0: cold ${s(cold.ms)}, cached ${s(cached.ms)}`);
  }

  // Down with no edit at all: what a clean stop costs here.
  const clean = await startRound("clean");
  const cleanDown = await timedDown(clean.env);
  console.log(`down after no edit: ${s(cleanDown.ms)}`);

  for (let r = 0; r < ROUNDS; r++) {
    const round = await startRound(r);
    const req = path.join(round.models, "add_sub/requirements.txt");
    // add_sub starts on tdgreet==1.0 (built above); this version was never built.
    const fresh = await edit(round, "add_sub", () => editorSave(req, `tdgreet==${ROUNDS + 1 + r}.0\n`));
    const back = await edit(round, "add_sub", () => editorSave(req, "tdgreet==1.0\n"));
    if (fresh.phase !== "ready" || back.phase !== "ready")
      throw new Error(`bench: requirements edits ended ${fresh.phase}, ${back.phase}`);
    figures.newEnvEditMs.push(fresh.sinceSavedMs);
    figures.cachedEnvEditMs.push(back.sinceSavedMs);

    const modelPy = path.join(round.models, "plain/1/model.py");
    const original = await fsp.readFile(modelPy, "utf8");
    const broken = path.join(round.models, "broken");
    const outcomes = [
      await edit(round, "plain", () => editorSave(modelPy, `${original}\n# bench edit ${r}\n`)),
      await edit(round, "plain", () => editorSave(modelPy, `${original}\nraise RuntimeError("bench: broken edit")\n`)),
      await edit(round, "plain", () => editorSave(modelPy, original)),
      await edit(round, "broken", async () => {
        await fsp.cp(path.join(round.models, "plain"), broken, { recursive: true });
        await fsp.writeFile(
          path.join(broken, "config.pbtxt"),
          (await fsp.readFile(path.join(broken, "config.pbtxt"), "utf8")).replace('"plain"', '"broken"'),
        );
        await fsp.appendFile(path.join(broken, "1/model.py"), '\nraise RuntimeError("bench: broken model")\n');
      }),
      await edit(round, "broken", () => fsp.rm(broken, { recursive: true })),
    ].map((e) => e.phase);
    const down = await timedDown(round.env);
    figures.downAfterFailuresMs.push(down.ms);
    console.log(
      `round ${r}: requirements edit, new environment ${s(fresh.sinceSavedMs)}, cached ${s(back.sinceSavedMs)}; ` +
        `sequence ${outcomes.join(" -> ")}; down ${s(down.ms)}` +
        (down.waited.length ? ` (${down.waited.at(-1)})` : ""),
    );
  }

  const range = (xs) =>
    xs.length
      ? `${s(Math.min(...xs))} - ${s(Math.max(...xs))} (median ${s(xs.toSorted((a, b) => a - b)[xs.length >> 1])})`
      : "-";
  console.log(
    `\n${os.cpus().length} cores, load average ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(" ")}`,
  );
  console.log(`cold environment build            ${range(figures.coldBuildMs)}`);
  console.log(`cached environment                ${range(figures.cachedBuildMs)}`);
  console.log(`requirements edit, new env        ${range(figures.newEnvEditMs)}  (save -> READY)`);
  console.log(`requirements edit, cached env     ${range(figures.cachedEnvEditMs)}  (save -> READY)`);
  console.log(`down after failed reloads         ${range(figures.downAfterFailuresMs)}`);
  console.log(`down after no edit                ${s(cleanDown.ms)}`);
  if (OUT)
    await fsp.writeFile(OUT, JSON.stringify({ ...figures, cleanDownMs: cleanDown.ms, loadavg: os.loadavg() }, null, 2));
} finally {
  for (const env of started) await run(process.execPath, [CLI, "down"], env);
  await fsp.rm(work, { recursive: true, force: true });
}
