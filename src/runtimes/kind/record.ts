import { z } from "zod";
import { parseRuntimeRecord } from "../record.js";

/** The kind runtime's part of the run record: its cluster and the objects it applied. */
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

export function parseKindRecord(value: unknown, runFile: string): KindRecord {
  return parseRuntimeRecord(kindRecordSchema, value, runFile, {
    what: "a kind run",
    hint: `Delete the cluster's objects yourself (\`kind get clusters\`), then remove the record (\`rm ${runFile}\`).`,
  });
}
