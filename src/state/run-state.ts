import fsp from "node:fs/promises";
import { z } from "zod";
import type { Paths } from "../config/paths.js";
import { UserError } from "../errors.js";
import { writeFileAtomic } from "./atomic-write.js";
import { isOurProcess } from "./process.js";

export const kindRecordSchema = z.object({
  cluster: z.string(),
  /** kubectl's context for it (kind-<cluster>); always passed explicitly, never the user's current one. */
  context: z.string(),
  namespace: z.string(),
  /** This run created the cluster. */
  created: z.boolean(),
  /** The cluster outlives the run (`--keep-cluster`, now or when it was created); otherwise `down` deletes it. */
  keepCluster: z.boolean(),
  /** The worker node's container (where node-gpu-setup.sh ran, and which mounts the state folder). */
  nodeContainer: z.string().optional(),
  image: z.string(),
  gpus: z.number(),
  /** The object kinds applied (plural resource names), deleted by the run's label. */
  kinds: z.array(z.string()),
  /** DOCKER_HOST at `up` (or the default socket): the daemon kind's nodes run on. */
  daemon: z.string(),
});
export type KindRecord = z.infer<typeof kindRecordSchema>;

/** The record of the current run, so `status`, `logs` and `down` work from another shell. */
export const runStateSchema = z.object({
  version: z.literal(1),
  runId: z.string(),
  runtime: z.enum(["local", "docker", "kind"]),
  pid: z.number().int(),
  executable: z.string(),
  /** The `up` process when it runs in the foreground; undefined when detached. */
  ownerPid: z.number().int().optional(),
  detached: z.boolean(),
  /** The detached run's watcher process (hot reload), stopped by `down`. */
  supervisorPid: z.number().int().optional(),
  /**
   * Models `up` did not stage: refused by lint, or skipped (a GPU model without a GPU). Triton
   * never lists them, so status and an attached dashboard learn of them here, until an edit
   * of the model (recorded in edits.json) takes over.
   */
  notServed: z
    .array(z.object({ model: z.string(), why: z.enum(["refused", "skipped"]), reason: z.string() }))
    .optional(),
  startedAt: z.string(),
  modelsDir: z.string(),
  runDir: z.string(),
  repository: z.string(),
  logFile: z.string(),
  host: z.string(),
  ports: z.object({ http: z.number(), grpc: z.number(), metrics: z.number() }),
  reload: z.enum(["poll", "explicit"]),
  pollSecs: z.number(),
  repositoryKey: z.object({ header: z.string(), value: z.string() }),
  /** false when Triton was started with --disable-auto-complete-config (no model needed it). */
  autoCompleteConfig: z.boolean().optional(),
  /** The docker runtime's container (pid is then the container's main process on the daemon's host). */
  docker: z
    .object({
      containerId: z.string(),
      containerName: z.string(),
      image: z.string(),
      /** DOCKER_HOST at `up` (or the default socket), so other shells reach the same daemon. */
      daemon: z.string(),
      gpus: z.string(),
      shmBytes: z.number(),
      monitoring: z.object({ prometheus: z.string(), grafana: z.string() }).optional(),
    })
    .optional(),
  /**
   * The kind runtime's cluster and objects. `pid` is then the foreground `up`'s kubectl
   * port-forward (a detached run's supervisor runs its own), not Triton, which runs in the pod.
   */
  kind: kindRecordSchema.optional(),
});
export type RunState = z.infer<typeof runStateSchema>;

export async function writeRunState(paths: Paths, state: RunState): Promise<void> {
  // 0600: the record holds the key that unlocks Triton's repository API.
  await writeFileAtomic(paths.runFile, JSON.stringify(state, null, 2) + "\n", 0o600);
}

export async function readRunState(paths: Paths): Promise<RunState | undefined> {
  let raw: string;
  try {
    raw = await fsp.readFile(paths.runFile, "utf8");
  } catch {
    return undefined;
  }
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (err) {
    throw new UserError(`the run record ${paths.runFile} is not valid JSON`, {
      hint: `Delete it (\`rm ${paths.runFile}\`) after checking that no tritonserver of ours is running (\`triton-dev down\` looks for them).`,
      cause: err,
    });
  }
  const parsed = runStateSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new UserError(
      `the run record ${paths.runFile} is not one this version understands (field ${issue?.path.join(".") || "?"}: ${issue?.message})`,
      {
        hint: `Delete it (\`rm ${paths.runFile}\`) after stopping any running server.`,
      },
    );
  }
  return parsed.data;
}

export async function removeRunState(paths: Paths): Promise<void> {
  await fsp.rm(paths.runFile, { force: true });
}

export type LiveRun = { state: RunState; alive: true } | { state: RunState; alive: false } | undefined;

/** Whether the run's server is still the one we started: our process, or our running container. */
export async function runAlive(s: RunState): Promise<boolean> {
  if (s.runtime === "docker") {
    // Loaded on demand: commands of local runs never load the Docker client.
    const { dockerRunAlive } = await import("../runtimes/docker/liveness.js");
    return dockerRunAlive(s);
  }
  if (s.runtime === "kind") {
    const { kindRunAlive } = await import("../runtimes/kind/liveness.js");
    return kindRunAlive(s);
  }
  return isOurProcess(s.pid, s.executable);
}

/** The recorded run and whether its server is still the process we started. */
export async function currentRun(
  paths: Paths,
  isAlive: (s: RunState) => boolean | Promise<boolean> = runAlive,
): Promise<LiveRun> {
  const state = await readRunState(paths);
  if (!state) return undefined;
  return (await isAlive(state)) ? { state, alive: true } : { state, alive: false };
}
