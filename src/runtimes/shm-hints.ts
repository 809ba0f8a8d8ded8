import { tailLinesSync } from "../state/log-file.js";
import { formatSize } from "./container-options.js";

/** The python backend's own words when /dev/shm is too small (python_be / shm_manager). */
const SHM_PATTERN =
  /use '--shm-size' flag|Unable to initialize shared memory key|Failed to increase the shared memory pool size/i;

export function isShmError(text: string | undefined): boolean {
  return !!text && SHM_PATTERN.test(text);
}

export function shmHint(shmBytes: number): string {
  const next = formatSize(Math.max(shmBytes * 2, 1024 ** 3));
  return `Triton's python backend ran out of shared memory: the container's /dev/shm is ${formatSize(shmBytes)}. Each python model instance needs at least 1 MB there, more for large tensors; start again with a larger --shm-size (e.g. --shm-size ${next}).`;
}

/** A line handler that turns the first shared-memory error Triton logs into one hint. */
export function shmHinter(shmBytes: number, hint: (message: string) => void): (line: string) => void {
  let hinted = false;
  return (line) => {
    if (hinted || !isShmError(line)) return;
    hinted = true;
    hint(shmHint(shmBytes));
  };
}

/** A server that exited during start because /dev/shm was too small gets the fix. */
export function shmStartHint(logFile: string, shmBytes: number): string | undefined {
  return tailLinesSync(logFile, 40).some(isShmError) ? shmHint(shmBytes) : undefined;
}
