import type Docker from "dockerode";
import { REAL_CLOCK, type Clock } from "../../../clock.js";
import { log as rootLog } from "../../../log/logger.js";
import { BACKEND_HOMES, backendsOfImage } from "../../ngc-images.js";
import { LABEL, TOOL, type Role } from "./labels.js";

const log = rootLog.child("docker");

/** Where NGC's tritonserver images, and images built in their layout, keep one folder per backend. */
export const IMAGE_BACKENDS_DIR = "/opt/tritonserver/backends";

/**
 * A daemon whose storage copies an image for each container (vfs) or that is busy elsewhere may
 * take long to create one; `up` then goes on without knowing, as for an image of another layout.
 */
const PROBE_TIMEOUT_MS = 30_000;

/**
 * The backends an image holds, where its name does not tell them (no NGC tritonserver flavour: an
 * image built or mirrored elsewhere): each backend of BACKEND_HOMES looked for in
 * IMAGE_BACKENDS_DIR of a container created from the image and never started (the daemon's stat
 * of a path, no file read; the container's creation is the cost: 3.9 s for the tests' 100 MB image
 * on vfs storage, which copies the image, on a busy 2-core machine). Without it, a model whose backend the image
 * lacks reaches Triton and comes back as "unable to find backend library", which names neither
 * the image nor where the model runs. Undefined where the name tells (`backendsOfImage`) or the
 * image has no such folder (another layout: only its Triton knows its backends).
 */
export async function imageBackends(
  docker: Docker,
  image: string,
  imageId: string,
  timeoutMs = PROBE_TIMEOUT_MS,
  clock: Clock = REAL_CLOCK,
): Promise<string[] | undefined> {
  if (backendsOfImage(image) !== undefined) return undefined;
  const t0 = Date.now();
  let timer: unknown;
  const late = new Promise<undefined>((resolve) => {
    timer = clock.setTimeout(() => {
      log.warn("the image's backends were not found in time: Triton will say which it lacks", { image, timeoutMs });
      resolve(undefined);
    }, timeoutMs);
  });
  // A probe past its time still removes its container when the daemon answers.
  const found = await Promise.race([probe(docker, imageId), late]).finally(() => clock.clearTimeout(timer));
  log.debug("backends found in the image", { image, found, ms: Date.now() - t0 });
  return found;
}

async function probe(docker: Docker, imageId: string): Promise<string[] | undefined> {
  const container = await docker.createContainer({
    Image: imageId,
    // Never started: the command only has to be one the daemon accepts.
    Entrypoint: ["/bin/true"],
    Cmd: [],
    Labels: { [LABEL.tool]: TOOL, [LABEL.role]: "backend-probe" satisfies Role },
    HostConfig: { NetworkMode: "none" },
  });
  const exists = async (p: string) =>
    container.infoArchive({ path: p }).then(
      (res: { resume?: () => void }) => {
        res.resume?.();
        return true;
      },
      (err: { statusCode?: number }) => (err.statusCode === 404 ? false : Promise.reject(err)),
    );
  try {
    if (!(await exists(IMAGE_BACKENDS_DIR))) return undefined;
    const found: string[] = [];
    for (const backend of Object.keys(BACKEND_HOMES))
      if (await exists(`${IMAGE_BACKENDS_DIR}/${backend}`)) found.push(backend);
    return found;
  } finally {
    // Not waited for: on vfs storage the daemon deletes a copy of the whole image, which `up`
    // need not wait on (the request is sent at once; the daemon finishes it alone).
    container.remove({ force: true }).catch(() => {});
  }
}
