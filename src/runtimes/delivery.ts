/**
 * The delivery every runtime of this build shares: the run folder holds the key and the library
 * that hands it to tritonserver (triton/key-shim.ts), and Triton reads the folder where the
 * runtime puts it (in place, a container's mount, a kind node's hostPath, a pod's volume filled by
 * the cluster runtime's copy).
 */
import type { DriverContext, Delivery, RunFolderPaths } from "./driver.js";
import { REPOSITORY_KEY_HEADER } from "../triton/http-client.js";
import { ensureKeyShim, prepareRunKey } from "../triton/key-shim.js";

export async function deliverRunFolder(
  folder: RunFolderPaths,
  ctx: Pick<DriverContext, "paths" | "env">,
  tritonSees?: Delivery["tritonSees"],
): Promise<Delivery> {
  // A reattached server keeps the key its folder holds; a new one gets a new key.
  const repositoryKey = await prepareRunKey(
    folder.runDir,
    REPOSITORY_KEY_HEADER,
    await ensureKeyShim(ctx.paths.home, { env: ctx.env }),
  );
  return { repositoryKey, ...(tritonSees ? { tritonSees } : {}) };
}
