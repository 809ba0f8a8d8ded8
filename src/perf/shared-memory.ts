import { randomBytes } from "node:crypto";
import fsp from "node:fs/promises";
import path from "node:path";
import { UsageError, UserError } from "../errors.js";
import { createLogger } from "../log/logger.js";
import { RUNTIME_FACTS } from "../runtimes/kinds.js";
import { openShmFolder } from "../state/shm-folder.js";
import { pidAlive } from "../state/process.js";
import type { RunState } from "../state/run-state.js";
import type { RawTensor } from "../triton/binary.js";
import {
  SharedMemoryApiError,
  SharedMemoryRestrictedError,
  type ShmTensorRef,
  type SystemShmApi,
} from "../triton/system-shm.js";

/**
 * `perf --shared-memory system`: every distinct payload's input tensors written once into a POSIX
 * shm object registered with Triton, so requests carry only references and the run measures the
 * server without the transport of request bodies. Outputs still come back in the response body.
 */

export type SharedMemoryMode = "none" | "system";

const log = createLogger("triton-dev:perf:shm");

/** Offsets of tensors in a region are kept to this alignment, as a numpy view of them would want. */
export const SHM_ALIGNMENT = 64;

export interface RegionLayout {
  /**
   * The region's name at Triton: 128 random bits, unrelated to the file. Inference is open to every
   * local user and names a region only by this, so it must not be derivable from `ls /dev/shm`;
   * registration and status, which would list it, take the run's key.
   */
  name: string;
  /** The shm object's name in /dev/shm, `triton_dev_perf_<session>_<n>` (leftover cleanup reads its pid). */
  file: string;
  /** shm_open's name: "/" + file, as Triton's register takes it. */
  key: string;
  byteSize: number;
  /** One per input of the payload, in its order. */
  inputs: ShmTensorRef[];
}

/** Region names for one perf run: unique per process and run, so parallel perfs never meet. */
export function shmSessionId(pid = process.pid): string {
  return `${pid}_${randomBytes(3).toString("hex")}`;
}

export const SHM_PREFIX = "triton_dev_perf_";

/** A fresh region name at Triton: 128 random bits in hex. */
export function randomRegionName(): string {
  return randomBytes(16).toString("hex");
}

/**
 * One region per payload, in the file `triton_dev_perf_<session>_<n>` under a fresh random name
 * at Triton, each input at an aligned offset.
 */
export function layoutRegions(
  payloads: readonly RawTensor[][],
  session: string,
  alignment = SHM_ALIGNMENT,
  regionName: () => string = randomRegionName,
): RegionLayout[] {
  return payloads.map((inputs, n) => {
    const file = `${SHM_PREFIX}${session}_${n}`;
    const name = regionName();
    let offset = 0;
    const refs = inputs.map((t) => {
      const ref = { region: name, offset, byteSize: t.data.length };
      offset = Math.ceil((offset + t.data.length) / alignment) * alignment;
      return ref;
    });
    // A region of 0 bytes cannot be mapped: an all-empty payload still takes one aligned block.
    return { name, file, key: `/${file}`, byteSize: Math.max(offset, alignment), inputs: refs };
  });
}

function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h) || h === "::ffff:127.0.0.1";
}

/**
 * Shared memory works only where Triton opens the same /dev/shm as perf: a server on this machine,
 * outside a container. Refuses with why and what to do otherwise.
 */
export function checkSharedMemoryTarget(t: { host: string; url?: string; state?: Pick<RunState, "runtime"> }): void {
  if (t.state && !RUNTIME_FACTS[t.state.runtime].sharesHostShm) {
    throw new UsageError(
      `--shared-memory system needs Triton on this machine, outside a container, but the recorded run's Triton runs under the ${t.state.runtime} runtime`,
      {
        hint: "Its container does not see this machine's /dev/shm. Leave out --shared-memory, or serve with `triton-dev up --runtime local`.",
      },
    );
  }
  if (!isLoopback(t.host)) {
    throw new UsageError(
      `--shared-memory system needs Triton on this machine, but ${t.url ? `-u ${t.url}` : "the server"} names ${t.host}`,
      {
        hint: "Shared memory regions are files in this machine's /dev/shm: give -u 127.0.0.1:PORT for a server here, or leave out --shared-memory.",
      },
    );
  }
}

export interface ShmSessionOptions {
  session?: string;
  /** Where POSIX shm objects live (glibc's shm_open opens /dev/shm/<name>). */
  shmDir?: string;
}

/**
 * The regions of one sweep, owned from creation to `close()`: the shm files and their
 * registrations. `create` undoes what it did when any step fails.
 */
export class SystemShmSession {
  private constructor(
    private readonly api: SystemShmApi,
    readonly regions: RegionLayout[],
    private readonly files: string[],
    private readonly registered: string[],
  ) {}

  static async create(
    api: SystemShmApi,
    payloads: readonly RawTensor[][],
    o: ShmSessionOptions = {},
  ): Promise<SystemShmSession> {
    const shmDir = o.shmDir ?? "/dev/shm";
    const regions = layoutRegions(payloads, o.session ?? shmSessionId());
    const s = new SystemShmSession(api, regions, [], []);
    try {
      for (const [n, region] of regions.entries()) {
        const file = path.join(shmDir, region.file);
        const bytes = Buffer.alloc(region.byteSize);
        payloads[n]!.forEach((t, i) => t.data.copy(bytes, region.inputs[i]!.offset));
        // wx: never take over an object someone else made; 0600: Triton runs as this user.
        const fh = await fsp.open(file, "wx", 0o600);
        s.files.push(file);
        try {
          await fh.writeFile(bytes);
        } finally {
          await fh.close();
        }
        await api.register(region.name, region.key, 0, region.byteSize);
        s.registered.push(region.name);
      }
    } catch (err) {
      await s.close();
      if (err instanceof SharedMemoryRestrictedError)
        throw new UserError(`Triton refused to register the input shared memory: its API needs a key`, {
          cause: err,
          hint: "A server started by `triton-dev up` takes its run's key, which perf sends when it measures that server: leave out -u. For another server, leave out --shared-memory.",
        });
      if (err instanceof SharedMemoryApiError)
        throw new UserError(`Triton could not register the input shared memory: ${err.message}`, {
          cause: err,
          hint: "Triton must run on this machine as a user that may open /dev/shm's files (0600, owned by you), and a server that restricts its shared memory API (as `triton-dev up`'s does) takes only its run's key, which perf sends for the `up` server (no -u); or leave out --shared-memory.",
        });
      throw new UserError(`cannot write the input shared memory under ${shmDir}: ${(err as Error).message}`, {
        cause: err,
        hint: `Check that ${shmDir} is there, writable and has room for ${regions.reduce((a, r) => a + r.byteSize, 0)} bytes; or leave out --shared-memory.`,
      });
    }
    return s;
  }

  /** Per payload, per input: where Triton finds its bytes. */
  get refs(): ShmTensorRef[][] {
    return this.regions.map((r) => r.inputs);
  }

  /** Unregister and unlink everything; idempotent, and never throws (it runs on the way out of errors). */
  async close(): Promise<void> {
    for (const name of this.registered.splice(0)) {
      await this.api
        .unregister(name)
        .catch((err: unknown) => log.warn(`unregister ${name}: ${(err as Error).message}`));
    }
    for (const file of this.files.splice(0)) {
      await fsp
        .rm(file, { force: true })
        .catch((err: unknown) => log.warn(`unlink ${file}: ${(err as Error).message}`));
    }
  }
}

const OWNER = new RegExp(`^${SHM_PREFIX}(\\d+)_[0-9a-f]+_\\d+$`);
/** Region names at Triton as `layoutRegions` makes them. */
const REGION_NAME = /^[0-9a-f]{32}$/;

/**
 * What a perf killed outright (SIGKILL, a crash of node itself) left: its shm objects and its
 * registrations at this server. Only files of our pattern whose pid is gone are touched, and only
 * registrations of such a file (their key) under a name of ours; returns the file names removed.
 * Never throws: a leftover is no reason to refuse the run.
 */
export async function removeLeftovers(
  api: SystemShmApi,
  o: { shmDir?: string; alive?: (pid: number) => boolean } = {},
): Promise<string[]> {
  const shmDir = o.shmDir ?? "/dev/shm";
  const alive = o.alive ?? pidAlive;
  const dead = (name: string) => {
    const m = OWNER.exec(name);
    return m !== null && !alive(Number(m[1]));
  };
  const removed: string[] = [];
  const regions = await api.status().catch(() => []);
  for (const r of regions.filter((r) => REGION_NAME.test(r.name) && r.key.startsWith("/") && dead(r.key.slice(1)))) {
    const file = r.key.slice(1);
    await api.unregister(r.name).then(
      () => {
        if (!removed.includes(file)) removed.push(file);
      },
      (err: unknown) => log.warn(`unregister leftover ${r.name}: ${(err as Error).message}`),
    );
  }
  const files = await fsp.readdir(shmDir).catch(() => [] as string[]);
  // Only files of ours directly in the folder: another user may name a file, or a link, ours.
  const folder = openShmFolder(shmDir);
  try {
    for (const name of files.filter(dead)) {
      const r = folder?.remove(name, OWNER);
      if (r?.removed) {
        if (!removed.includes(name)) removed.push(name);
      } else if (r && r.why !== "gone") log.warn(`left ${name} in ${shmDir}: ${r.why}`);
    }
  } finally {
    folder?.close();
  }
  return removed;
}
