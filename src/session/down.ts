import fsp from "node:fs/promises";
import path from "node:path";
import type { Paths } from "../config/paths.js";
import { stopProcessGroup } from "../runtimes/local/process-group.js";
import { findProcesses, isOurProcess, terminateOurs } from "../state/process.js";
import { UserError } from "../errors.js";
import { currentRun, removeRunState, type RunState } from "../state/run-state.js";

export interface DownResult {
  stopped?: RunState;
  /** A record whose server was already gone (crash, reboot): cleaned up. */
  stale?: RunState;
  /** Servers of ours found without a record (a run that crashed mid-start) and stopped. */
  orphans: number[];
  /** Containers of ours (this state folder's labels) found without a record, and removed. */
  orphanContainers: string[];
  /** kind: clusters of this state folder a crashed run left (not kept), deleted. */
  orphanClusters: string[];
  /** kind: runs whose objects were left in a kept cluster, deleted. */
  orphanKindRuns: string[];
  /** kind: kubectl port-forward / logs processes of such runs, stopped. */
  orphanKubectls: number[];
  /** kind: the recorded run's cluster was deleted (it was not kept). */
  clusterDeleted?: string;
}

/** Servers we started carry our runs folder in their --model-repository flag; nothing else is touched. */
export function findOrphanServers(paths: Paths, procRoot = "/proc"): number[] {
  const marker = `--model-repository=${paths.runsDir}${path.sep}`;
  return findProcesses((argv) => argv[0]!.endsWith("tritonserver") && argv.some((a) => a.startsWith(marker)), procRoot);
}

/** The recorded run's container and whatever ran beside it (by our labels only); the daemon must answer. */
async function stopDockerRun(s: RunState, graceMs: number): Promise<void> {
  if (!s.docker) return;
  const [{ connectDocker, requireDaemon }, { removeRun }, { isOurs }] = await Promise.all([
    import("../runtimes/docker/client.js"),
    import("../runtimes/docker/docker-runtime.js"),
    import("../runtimes/docker/settings.js"),
  ]);
  const env = { DOCKER_HOST: s.docker.daemon };
  const docker = connectDocker(env);
  try {
    await requireDaemon(docker, env);
  } catch (err) {
    throw new UserError(`cannot stop container ${s.docker.containerName}: ${(err as Error).message}`, {
      hint: (err as UserError).hint,
      cause: err,
    });
  }
  const info = await docker
    .getContainer(s.docker.containerId)
    .inspect()
    .catch(() => undefined);
  // A container of that id without our labels is not ours to remove, whatever the record says.
  const extra = info && isOurs(info.Config.Labels) ? [info.Id] : [];
  await removeRun(docker, s.runId, path.dirname(s.runDir), extra, Math.round(graceMs / 1000));
}

/** Containers a crashed run of this state folder left behind; skipped quietly when no daemon answers. */
async function removeOrphanContainers(
  paths: Paths,
  keepRunId: string | undefined,
  env: NodeJS.ProcessEnv,
  graceMs: number,
): Promise<string[]> {
  const [{ connectDocker, requireDaemon }, { findOurs, removeRun }] = await Promise.all([
    import("../runtimes/docker/client.js"),
    import("../runtimes/docker/docker-runtime.js"),
  ]);
  const docker = connectDocker(env);
  try {
    await requireDaemon(docker, env, 1_500);
  } catch {
    return [];
  }
  const ours = await findOurs(docker, { runsDir: paths.runsDir }).catch(() => []);
  const removed: string[] = [];
  for (const runId of new Set(ours.map((c) => c.Labels["dev.triton-dev.run-id"] ?? ""))) {
    if (runId === keepRunId) continue;
    const names = ours
      .filter((c) => c.Labels["dev.triton-dev.run-id"] === runId)
      .map((c) => (c.Names[0] ?? c.Id).replace(/^\//, ""));
    await removeRun(docker, runId, paths.runsDir, [], Math.round(graceMs / 1000));
    removed.push(...names);
  }
  return removed;
}

/**
 * The recorded kind run: its kubectl children (the supervisor's, or a crashed `up`'s), then
 * the cluster if it is not kept, else the run's objects by label.
 */
async function stopKindRun(
  paths: Paths,
  s: RunState,
  graceMs: number,
  env: NodeJS.ProcessEnv,
): Promise<string | undefined> {
  if (!s.kind) return undefined;
  // The supervisor stops its port-forward and log follower on SIGTERM; it is given a moment,
  // so that nothing of the run is left when `down` returns.
  const deadline = Date.now() + 5_000;
  while (s.supervisorPid !== undefined && isOurProcess(s.supervisorPid, process.execPath) && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 100));
  const [{ connectDocker }, { KindTools }, { findOurKubectls, teardownRun, terminatePids }] = await Promise.all([
    import("../runtimes/docker/client.js"),
    import("../runtimes/kind/tools.js"),
    import("../runtimes/kind/teardown.js"),
  ]);
  terminatePids(findOurKubectls(s.kind.cluster));
  const tools = new KindTools(undefined, env);
  try {
    const r = await teardownRun(
      tools,
      connectDocker({ ...env, DOCKER_HOST: s.kind.daemon }),
      s.kind,
      s.runId,
      paths.stateDir,
      graceMs,
    );
    return r.clusterDeleted ? s.kind.cluster : undefined;
  } catch (err) {
    if (err instanceof UserError)
      throw new UserError(`cannot clean up the kind cluster ${s.kind.cluster}: ${err.message}`, {
        hint: err.hint,
        cause: err,
      });
    throw err;
  }
}

/** Clusters and objects crashed kind runs of this state folder left; skipped quietly without kind or Docker. */
async function removeKindLeftovers(
  paths: Paths,
  live: RunState | undefined,
  env: NodeJS.ProcessEnv,
  graceMs: number,
): Promise<{ clusters: string[]; runs: string[]; processes: number[] }> {
  const [{ connectDocker, requireDaemon }, { KindTools }, { removeLeftovers }, { listClusters }] = await Promise.all([
    import("../runtimes/docker/client.js"),
    import("../runtimes/kind/tools.js"),
    import("../runtimes/kind/teardown.js"),
    import("../runtimes/kind/cluster.js"),
  ]);
  const tools = new KindTools(undefined, env);
  // Without kind (most runs of the other runtimes) there is nothing to look for.
  if ((await listClusters(tools).catch(() => [])).length === 0) return { clusters: [], runs: [], processes: [] };
  const docker = connectDocker(env);
  try {
    await requireDaemon(docker, env, 1_500);
  } catch {
    return { clusters: [], runs: [], processes: [] };
  }
  const r = await removeLeftovers(
    tools,
    docker,
    paths.stateDir,
    live?.kind ? { runId: live.runId, cluster: live.kind.cluster } : undefined,
    graceMs,
  );
  return r;
}

export async function stopRun(
  paths: Paths,
  graceMs = 15_000,
  env: NodeJS.ProcessEnv = process.env,
): Promise<DownResult> {
  const run = await currentRun(paths);
  const result: DownResult = {
    orphans: [],
    orphanContainers: [],
    orphanClusters: [],
    orphanKindRuns: [],
    orphanKubectls: [],
  };
  terminateOurs(run?.state.supervisorPid, process.execPath);
  if (run?.state.runtime === "kind") {
    const deleted = await stopKindRun(paths, run.state, graceMs, env);
    if (deleted) result.clusterDeleted = deleted;
    if (run.alive) result.stopped = run.state;
    else result.stale = run.state;
  } else if (run?.state.runtime === "docker") {
    await stopDockerRun(run.state, graceMs);
    if (run.alive) result.stopped = run.state;
    else result.stale = run.state;
  } else if (run?.alive) {
    await stopProcessGroup(run.state.pid, { graceMs });
    result.stopped = run.state;
  } else if (run) {
    result.stale = run.state;
  }
  if (run) await removeRunState(paths);
  for (const pid of findOrphanServers(paths)) {
    await stopProcessGroup(pid, { graceMs });
    result.orphans.push(pid);
  }
  result.orphanContainers = await removeOrphanContainers(paths, run?.state.runId, env, graceMs);
  const kindLeft = await removeKindLeftovers(paths, undefined, env, graceMs);
  result.orphanClusters = kindLeft.clusters;
  result.orphanKindRuns = kindLeft.runs;
  result.orphanKubectls = kindLeft.processes;
  await pruneRuns(paths, 3);
  return result;
}

/** Keep the newest `keep` run folders (their logs help after a crash); remove the rest. */
export async function pruneRuns(paths: Paths, keep: number): Promise<void> {
  let names: string[];
  try {
    names = (await fsp.readdir(paths.runsDir)).sort();
  } catch {
    return;
  }
  const live = (await currentRun(paths))?.state.runDir;
  for (const n of names.slice(0, Math.max(0, names.length - keep))) {
    const dir = path.join(paths.runsDir, n);
    if (dir !== live) await fsp.rm(dir, { recursive: true, force: true });
  }
}
