import { z } from "zod";
import { parseRuntimeRecord } from "../record.js";

/** The cluster runtime's part of the run record: where its objects are. */
export const clusterRecordSchema = z.object({
  /** The kubeconfig context, always passed explicitly (never the user's current one). */
  context: z.string(),
  namespace: z.string(),
  /** The Deployment's and Service's name. */
  name: z.string(),
  image: z.string(),
  gpus: z.number(),
  /** The object kinds created (plural resource names), deleted by the run's label. */
  kinds: z.array(z.string()),
});
export type ClusterRecord = z.infer<typeof clusterRecordSchema>;

export function parseClusterRecord(value: unknown, runFile: string): ClusterRecord {
  return parseRuntimeRecord(clusterRecordSchema, value, runFile, {
    what: "a cluster run",
    hint: `Delete the run's objects yourself (\`kubectl get deployments,services -l triton-dev.io/run\`), then remove the record (\`rm ${runFile}\`).`,
  });
}
