import fsp from "node:fs/promises";
import { z } from "zod";
import { requireTrustedState } from "../config/home-trust.js";
import type { Paths } from "../config/paths.js";
import { UserError } from "../errors.js";
import { writeFileAtomic } from "./atomic-write.js";
import path from "node:path";
import type { RuntimeKind } from "../runtime-kind.js";

/** The record of the current run, so `status`, `logs` and `down` work from another shell. */
export const runStateSchema = z.object({
  version: z.literal(1),
  runId: z.string(),
  /** The runtime's name; its driver (runtimes/registry.ts) refuses a name this build does not have. */
  runtime: z.custom<RuntimeKind>((v) => typeof v === "string" && /^[a-z][a-z0-9-]*$/.test(v), {
    message: "not a runtime's name",
  }),
  /**
   * local: the tritonserver process; docker: the container's main process on the daemon's host; kind: the foreground
   * `up`'s kubectl port-forward.
   */
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
  /** The image `--image` named (docker, kind, cluster): which backends the run's Triton has. */
  image: z.string().optional(),
  /** The backends the runtime found in `image` where its name does not tell them (docker). */
  imageBackends: z.array(z.string()).optional(),
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
  /**
   * Where the run's Triton sees the staging repository and its snapshots when not at their paths
   * here (a container's mounts), as the runtime's delivery step said: Triton's messages name them.
   */
  tritonSees: z.object({ repository: z.string(), store: z.string() }).optional(),
  /** The runtime builds an environment for a python model's requirements.txt (envs/): said in its import errors. */
  buildsEnvironments: z.literal(true).optional(),
  /** GPUs the server sees (0: none), as planned at `up`; absent when unknown. */
  gpus: z.number().int().optional(),
  /** false when Triton was started with --disable-auto-complete-config (no model needed it). */
  autoCompleteConfig: z.boolean().optional(),
  /**
   * The runtime's own part (a container, a cluster), validated by its driver's schema when the run
   * is attached again; this file knows nothing of runtimes beyond their names.
   */
  runtimeRecord: z.unknown().optional(),
});
export type RunState = z.infer<typeof runStateSchema>;

export async function writeRunState(paths: Paths, state: RunState): Promise<void> {
  requireTrustedState(paths);
  // 0600: the record holds the key that unlocks Triton's repository API.
  await writeFileAtomic(paths.runFile, JSON.stringify(state, null, 2) + "\n", 0o600);
}

/** The recorded run; UntrustedFolderError when another user can change the state folder (nothing is read). */
export async function readRunState(paths: Paths): Promise<RunState | undefined> {
  requireTrustedState(paths);
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
  requireTrustedState(paths);
  await fsp.rm(paths.runFile, { force: true });
}

/** Where the reload controller keeps each model's last edit, for `status` from another shell. */
export function editsFile(state: Pick<RunState, "runDir">): string {
  return path.join(state.runDir, "edits.json");
}
