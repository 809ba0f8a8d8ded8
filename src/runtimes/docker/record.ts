import { z } from "zod";
import { parseRuntimeRecord } from "../record.js";

/** The docker runtime's part of the run record: its container. */
export const dockerRecordSchema = z.object({
  containerId: z.string(),
  containerName: z.string(),
  image: z.string(),
  /** DOCKER_HOST at `up` (or the default socket), so other shells reach the same daemon. */
  daemon: z.string(),
  gpus: z.string(),
  shmBytes: z.number(),
  monitoring: z.object({ prometheus: z.string(), grafana: z.string() }).optional(),
});
export type DockerRecord = z.infer<typeof dockerRecordSchema>;

export function parseDockerRecord(value: unknown, runFile: string): DockerRecord {
  return parseRuntimeRecord(dockerRecordSchema, value, runFile, {
    what: "a container",
    hint: `Remove the container yourself (\`docker ps -a --filter label=dev.triton-dev.tool=triton-dev\`), then the record (\`rm ${runFile}\`).`,
  });
}
