import fs from "node:fs";
import fsp from "node:fs/promises";

/**
 * How many NVIDIA GPUs the driver lists, without running anything (nvidia-smi may be absent in
 * a container that still has the driver). 0 when there is clearly no driver; undefined when
 * the driver is there but the count cannot be read.
 */
export async function detectNvidiaGpus(
  procDir = "/proc/driver/nvidia/gpus",
  deviceNode = "/dev/nvidiactl",
): Promise<number | undefined> {
  if (process.platform !== "linux") return undefined;
  try {
    return (await fsp.readdir(procDir)).length;
  } catch {
    return fs.existsSync(deviceNode) ? undefined : 0;
  }
}
