/**
 * What `triton-dev tune` may try: each dimension is an ordered list of values, so the search can
 * step to a neighbour (one up, one down). Derived from the served config (what the model accepts)
 * and the machine (cores, GPUs); `--space FILE` replaces any dimension it names.
 */
import fsp from "node:fs/promises";
import os from "node:os";
import { UsageError, UserError } from "../errors.js";
import type { ConfigEdits } from "../repo/config-edit.js";
import type { ModelConfigSummary } from "../triton/grpc-client.js";

export type InstanceKind = "KIND_CPU" | "KIND_GPU";

export interface SearchSpace {
  /** The kind whose instance count is searched (the model's first group's kind). */
  kind: InstanceKind;
  batching: boolean[];
  maxBatchSize: number[];
  preferredBatchSize: number[][];
  maxQueueDelayMicroseconds: number[];
  instances: number[];
}

/** One point of the space: a value of each dimension (the batching ones ignored when batching is off). */
export interface Candidate {
  batching: boolean;
  maxBatchSize: number;
  preferredBatchSize: number[];
  maxQueueDelayMicroseconds: number;
  instances: number;
}

export function candidateKey(c: Candidate): string {
  return c.batching
    ? `mbs=${c.maxBatchSize} pref=[${c.preferredBatchSize.join(",")}] delay=${c.maxQueueDelayMicroseconds} inst=${c.instances}`
    : `mbs=${c.maxBatchSize} no-batching inst=${c.instances}`;
}

/** The fields a candidate sets, for the config editor. */
export function candidateEdits(c: Candidate, kind: InstanceKind): ConfigEdits {
  return {
    maxBatchSize: c.maxBatchSize,
    dynamicBatching: c.batching
      ? { preferredBatchSize: c.preferredBatchSize, maxQueueDelayMicroseconds: c.maxQueueDelayMicroseconds }
      : false,
    instanceCounts: [{ kind, count: c.instances }],
  };
}

/** The fields that differ between two candidates, as edits (so an unchanged field is left alone). */
export function editsBetween(from: Candidate, to: Candidate, kind: InstanceKind): ConfigEdits {
  const e: ConfigEdits = {};
  if (to.maxBatchSize !== from.maxBatchSize) e.maxBatchSize = to.maxBatchSize;
  if (!to.batching && from.batching) e.dynamicBatching = false;
  else if (to.batching) {
    const db: { preferredBatchSize?: number[]; maxQueueDelayMicroseconds?: number } = {};
    if (!from.batching || !sameList(from.preferredBatchSize, to.preferredBatchSize))
      db.preferredBatchSize = to.preferredBatchSize;
    if (!from.batching || from.maxQueueDelayMicroseconds !== to.maxQueueDelayMicroseconds)
      db.maxQueueDelayMicroseconds = to.maxQueueDelayMicroseconds;
    if (!from.batching || Object.keys(db).length) e.dynamicBatching = db;
  }
  if (to.instances !== from.instances) e.instanceCounts = [{ kind, count: to.instances }];
  return e;
}

export interface Machine {
  cores: number;
  gpus: number;
}

export function thisMachine(gpus = 0, cores = os.availableParallelism()): Machine {
  return { cores, gpus };
}

const powersOfTwo = (max: number) => {
  const out: number[] = [];
  for (let v = 1; v <= max; v *= 2) out.push(v);
  return out;
};

const uniqSorted = (xs: number[]) => [...new Set(xs)].sort((a, b) => a - b);

/** The user's own config as a point of the space. */
export function startingPoint(config: ModelConfigSummary, kind: InstanceKind): Candidate {
  const group = config.instance_group.find((g) => g.kind === kind) ?? config.instance_group[0];
  return {
    batching: config.max_batch_size > 0 && config.dynamic_batching !== undefined,
    maxBatchSize: config.max_batch_size,
    preferredBatchSize: [...(config.dynamic_batching?.preferred_batch_size ?? [])],
    maxQueueDelayMicroseconds: Number(config.dynamic_batching?.max_queue_delay_microseconds ?? 0),
    instances: Math.max(1, group?.count ?? 1),
  };
}

/**
 * The default space: dynamic batching only where max_batch_size allows it (and the model is not
 * stateful: sequence_batching excludes dynamic_batching), instances up to the hardware.
 */
export function defaultSpace(config: ModelConfigSummary, machine: Machine): SearchSpace {
  const first = config.instance_group[0]?.kind;
  const kind: InstanceKind = first === "KIND_GPU" && machine.gpus > 0 ? "KIND_GPU" : "KIND_CPU";
  const start = startingPoint(config, kind);
  const mbs = config.max_batch_size;
  const maxInstances = kind === "KIND_GPU" ? Math.max(1, 4 * machine.gpus) : Math.max(1, Math.min(machine.cores, 8));
  const instances = uniqSorted([...Array.from({ length: maxInstances }, (_, i) => i + 1), start.instances]);
  if (mbs <= 0 || config.sequence_batching) {
    return {
      kind,
      batching: [false],
      maxBatchSize: [mbs],
      preferredBatchSize: [[]],
      maxQueueDelayMicroseconds: [0],
      instances,
    };
  }
  // The model accepts batches up to what the user wrote; smaller caps bound the queue's batches.
  const maxBatchSize = uniqSorted([mbs, Math.max(1, Math.floor(mbs / 2)), Math.max(1, Math.floor(mbs / 4))]);
  const singles = powersOfTwo(Math.min(mbs, 64))
    .filter((v) => v >= 2)
    .map((v) => [v]);
  const preferredBatchSize: number[][] = [[], ...singles];
  if (start.preferredBatchSize.length && !preferredBatchSize.some((p) => sameList(p, start.preferredBatchSize)))
    preferredBatchSize.push(start.preferredBatchSize);
  const maxQueueDelayMicroseconds = uniqSorted([0, 100, 500, 1000, 2000, 5000, 10000, start.maxQueueDelayMicroseconds]);
  return { kind, batching: [false, true], maxBatchSize, preferredBatchSize, maxQueueDelayMicroseconds, instances };
}

export function sameList(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/** Put the starting point's values into the space, so the search can start there. */
export function withStart(space: SearchSpace, start: Candidate): SearchSpace {
  return {
    ...space,
    batching: [...new Set([...space.batching, start.batching])].sort((a, b) => Number(a) - Number(b)),
    maxBatchSize: uniqSorted([...space.maxBatchSize, start.maxBatchSize]),
    preferredBatchSize: space.preferredBatchSize.some((p) => sameList(p, start.preferredBatchSize))
      ? space.preferredBatchSize
      : [...space.preferredBatchSize, start.preferredBatchSize],
    maxQueueDelayMicroseconds: uniqSorted([...space.maxQueueDelayMicroseconds, start.maxQueueDelayMicroseconds]),
    instances: uniqSorted([...space.instances, start.instances]),
  };
}

/** How many distinct candidates the space holds (what an exhaustive sweep would measure). */
export function spaceSize(s: SearchSpace): number {
  const batched = s.batching.includes(true)
    ? s.maxBatchSize.length * s.preferredBatchSize.length * s.maxQueueDelayMicroseconds.length * s.instances.length
    : 0;
  const unbatched = s.batching.includes(false) ? s.instances.length : 0;
  return batched + unbatched;
}

/** Every candidate of the space, for an exhaustive sweep. */
export function allCandidates(s: SearchSpace): Candidate[] {
  const out: Candidate[] = [];
  // Without dynamic batching max_batch_size changes nothing the server does with batch-1 requests.
  if (s.batching.includes(false)) {
    const maxBatchSize = Math.max(...s.maxBatchSize);
    for (const instances of s.instances)
      out.push({ batching: false, maxBatchSize, preferredBatchSize: [], maxQueueDelayMicroseconds: 0, instances });
  }
  for (const batching of s.batching.filter((b) => b))
    for (const maxBatchSize of s.maxBatchSize)
      for (const instances of s.instances) {
        for (const preferredBatchSize of s.preferredBatchSize)
          for (const maxQueueDelayMicroseconds of s.maxQueueDelayMicroseconds)
            out.push({ batching, maxBatchSize, preferredBatchSize, maxQueueDelayMicroseconds, instances });
      }
  return out;
}

/** `--space FILE`'s JSON names some dimensions; the others stay as derived. */
export interface SpaceFile {
  batching?: boolean[];
  maxBatchSize?: number[];
  preferredBatchSize?: number[][];
  maxQueueDelayMicroseconds?: number[];
  instances?: number[];
}

const KEYS = ["batching", "maxBatchSize", "preferredBatchSize", "maxQueueDelayMicroseconds", "instances"] as const;

/** Check and apply a `--space` file's dimensions; errors name the file and the key. */
export function applySpaceFile(
  space: SearchSpace,
  raw: unknown,
  file: string,
  config: ModelConfigSummary,
): SearchSpace {
  const bad = (key: string, what: string) =>
    new UserError(`${file}: "${key}" ${what}`, {
      hint: `A --space file is JSON with any of ${KEYS.join(", ")}, e.g. {"instances": [1, 2], "maxQueueDelayMicroseconds": [0, 5000]}.`,
    });
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw bad("(top level)", "must be an object of dimensions");
  const r = raw as Record<string, unknown>;
  for (const k of Object.keys(r))
    if (!(KEYS as readonly string[]).includes(k)) throw bad(k, "is not a dimension tune knows");
  const ints = (key: string, min: number): number[] | undefined => {
    const v = r[key];
    if (v === undefined) return undefined;
    if (!Array.isArray(v) || v.length === 0 || v.some((x) => !Number.isInteger(x) || (x as number) < min))
      throw bad(key, `must be a non-empty list of whole numbers >= ${min}`);
    return uniqSorted(v as number[]);
  };
  const out: SearchSpace = { ...space };
  if (r.batching !== undefined) {
    if (!Array.isArray(r.batching) || r.batching.length === 0 || r.batching.some((b) => typeof b !== "boolean"))
      throw bad("batching", "must be a non-empty list of true/false");
    out.batching = [...new Set(r.batching as boolean[])];
  }
  const mbs = ints("maxBatchSize", 1);
  if (mbs) out.maxBatchSize = mbs;
  const delay = ints("maxQueueDelayMicroseconds", 0);
  if (delay) out.maxQueueDelayMicroseconds = delay;
  const inst = ints("instances", 1);
  if (inst) out.instances = inst;
  if (r.preferredBatchSize !== undefined) {
    const p = r.preferredBatchSize;
    if (
      !Array.isArray(p) ||
      p.length === 0 ||
      p.some((l) => !Array.isArray(l) || l.some((x) => !Number.isInteger(x) || (x as number) < 1))
    )
      throw bad("preferredBatchSize", "must be a non-empty list of lists of whole numbers >= 1, e.g. [[], [8, 16]]");
    out.preferredBatchSize = (p as number[][]).map((l) => uniqSorted(l));
  }
  if (config.max_batch_size <= 0 && (out.batching.includes(true) || out.maxBatchSize.some((m) => m > 0))) {
    throw new UsageError(`${file}: ${config.name} has max_batch_size 0, so Triton cannot batch its requests`, {
      hint: "Leave batching and maxBatchSize out of the space, or give the model a max_batch_size first.",
    });
  }
  const largest = Math.max(...out.maxBatchSize);
  if (out.preferredBatchSize.some((l) => l.some((v) => v > largest)))
    throw bad("preferredBatchSize", `has a size above the largest maxBatchSize (${largest})`);
  return out;
}

export async function readSpaceFile(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await fsp.readFile(file, "utf8");
  } catch (err) {
    throw new UserError(`cannot read the --space file ${file}: ${(err as Error).message}`, { cause: err });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new UserError(`${file} is not JSON: ${(err as Error).message}`, {
      cause: err,
      hint: 'A --space file is JSON, e.g. {"instances": [1, 2]}.',
    });
  }
}
