import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { REAL_CLOCK, type Clock } from "../clock.js";
import { UsageError, UserError } from "../errors.js";
import { removeField, renameConfig, setField } from "../repo/config-edit.js";
import { formatDiagnostic } from "../repo/diagnostics.js";
import { lintModel, type LintOptions } from "../repo/lint.js";
import { sharedConfigCompleter } from "../repo/auto-complete-run.js";
import type { ModelConfigSummary } from "../triton/grpc-client.js";
import type { TritonHttpClient } from "../triton/http-client.js";
import { lintFacts } from "../runtimes/kinds.js";
import type { RunState } from "../state/run-state.js";

/** What `--compare` was asked to compare. */
export type CompareSpec =
  | { kind: "batching" }
  | { kind: "instances"; counts: number[] }
  | { kind: "config"; file: string }
  | { kind: "versions"; versions: string[] };

export function parseCompareFlag(value: string): CompareSpec {
  if (value === "batching") return { kind: "batching" };
  const inst = /^instances=(.+)$/.exec(value);
  if (inst) {
    const counts = inst[1]!.split(",").map((s) => s.trim());
    if (counts.length < 2 || counts.some((c) => !/^\d+$/.test(c) || Number(c) < 1)) {
      throw new UsageError(
        `--compare instances= needs two or more instance counts, e.g. instances=1,3; got '${value}'`,
      );
    }
    return { kind: "instances", counts: counts.map(Number) };
  }
  const cfg = /^config=(.+)$/.exec(value);
  if (cfg) return { kind: "config", file: cfg[1]! };
  const ver = /^versions=(.+)$/.exec(value);
  if (ver) {
    const versions = ver[1]!.split(",").map((s) => s.trim());
    if (
      versions.length < 2 ||
      versions.some((v) => !/^\d+$/.test(v) || Number(v) < 1) ||
      new Set(versions).size < versions.length
    )
      throw new UsageError(
        `--compare versions= needs two or more different version numbers, e.g. versions=1,2; got '${value}'`,
      );
    return { kind: "versions", versions: versions.map((v) => String(Number(v))) };
  }
  throw new UsageError(`--compare must be batching, instances=N,M, versions=N,M or config=FILE; got '${value}'`);
}

/** One side of a comparison: the original model (no configText) or a staged sibling. */
export interface Variant {
  label: string;
  servedModel: string;
  configText?: string;
  /** The user's file the config came from (`--compare config=FILE`), named in diagnostics. */
  sourceFile?: string;
  /** `--compare versions=`: the version of the model itself this side measures (nothing staged). */
  version?: string;
}

/** A variant that cannot be served: lint found errors in it, or Triton refused it. */
export class VariantError extends UserError {
  override name = "VariantError";
}

/** Sibling models carry this marker, so they are recognisable (and ignorable) anywhere. */
export const VARIANT_MARKER = "__perf_";

export function variantName(model: string, suffix: string): string {
  return `${model}${VARIANT_MARKER}${suffix}`;
}

export interface OriginalModel {
  name: string;
  configText: string;
  config: ModelConfigSummary;
}

/** The variants a --compare runs, first the baseline. Variants equal to the original use it directly. */
export async function planVariants(
  spec: Exclude<CompareSpec, { kind: "versions" }>,
  m: OriginalModel,
): Promise<Variant[]> {
  const ensemble = m.config.platform === "ensemble";
  if (spec.kind === "batching") {
    if (ensemble)
      throw new UsageError(`${m.name} is an ensemble: Triton does not batch ensembles themselves`, {
        hint: "Compare batching on the models its steps call.",
      });
    if (m.config.sequence_batching)
      throw new UsageError(
        `${m.name} is a stateful model: its sequence_batching batches its sequences, and Triton takes no dynamic_batching beside it`,
        {
          hint: "Compare what its batches are made of with --compare config=FILE (max_batch_size, the direct or oldest strategy), or its instances with --compare instances=N,M.",
        },
      );
    if (m.config.max_batch_size <= 0) {
      throw new UsageError(`${m.name} has max_batch_size 0, so Triton cannot batch its requests`, {
        hint: "Set max_batch_size in its config.pbtxt first.",
      });
    }
    const has = m.config.dynamic_batching !== undefined;
    const off: Variant = has
      ? {
          label: "no batching",
          servedModel: variantName(m.name, "nobatch"),
          configText: renameConfig(removeField(m.configText, "dynamic_batching"), variantName(m.name, "nobatch")),
        }
      : { label: "no batching", servedModel: m.name };
    const on: Variant = has
      ? { label: "dynamic batching", servedModel: m.name }
      : {
          label: "dynamic batching",
          servedModel: variantName(m.name, "batch"),
          configText: renameConfig(
            setField(m.configText, "dynamic_batching", "dynamic_batching { }"),
            variantName(m.name, "batch"),
          ),
        };
    return [off, on];
  }
  if (spec.kind === "instances") {
    if (ensemble)
      throw new UsageError(`${m.name} is an ensemble, which has no instances of its own`, {
        hint: "Compare instances on the models its steps call.",
      });
    const groups = m.config.instance_group;
    const current = groups.length === 1 ? groups[0]!.count : undefined;
    const kind = groups[0]?.kind ?? "KIND_AUTO";
    return spec.counts.map((n) => {
      if (n === current) return { label: `instances=${n}`, servedModel: m.name };
      const name = variantName(m.name, `instances${n}`);
      return {
        label: `instances=${n}`,
        servedModel: name,
        configText: renameConfig(
          setField(m.configText, "instance_group", `instance_group [ { count: ${n} kind: ${kind} } ]`),
          name,
        ),
      };
    });
  }
  let text: string;
  try {
    text = await fsp.readFile(spec.file, "utf8");
  } catch (err) {
    throw new UserError(`cannot read --compare config=${spec.file}: ${(err as Error).message}`);
  }
  const name = variantName(m.name, "config");
  return [
    { label: m.name, servedModel: m.name },
    {
      label: path.basename(spec.file),
      servedModel: name,
      configText: renameConfig(text, name),
      sourceFile: path.resolve(spec.file),
    },
  ];
}

/**
 * Copy a model's files into a new tree (a reflink where the filesystem can). Not hard links:
 * a new link changes the original file's ctime, which Triton's poll mode reads as an edit and
 * answers by reloading the original (and every ensemble using it) just as it is measured.
 * Modification times are kept: the staged original carries its model.py compiled (the local
 * runtime precompiles it), and a .pyc is valid only for a source of the same mtime. With a fresh
 * mtime the stub would write a new __pycache__ into the variant as it loads, poll mode would
 * take that for an edit and load the variant again while it is measured, and the server's
 * counters would restart with the new load.
 */
async function copyTree(src: string, dst: string): Promise<void> {
  await fsp.mkdir(dst, { recursive: true });
  for (const e of await fsp.readdir(src, { withFileTypes: true })) {
    const s = path.join(src, e.name);
    const d = path.join(dst, e.name);
    if (e.isDirectory()) await copyTree(s, d);
    else if (e.isFile()) {
      await fsp.copyFile(s, d, fs.constants.COPYFILE_FICLONE);
      const st = await fsp.stat(s);
      await fsp.utimes(d, st.atime, st.mtime);
    }
  }
}

/** How the run's repository is linted: by its runtime's facts, as `up` lints it. */
export function lintOfRun(state: Pick<RunState, "runtime">): LintOptions {
  return lintFacts(state.runtime);
}

export interface StagingTarget {
  repository: string;
  reload: "poll" | "explicit";
  client: TritonHttpClient;
  /** How the served repository is linted (its runtime): a variant is checked the same way before Triton sees it. */
  lint: LintOptions;
  /** The time the waits for Triton's loads and unloads run on (../clock.ts). */
  clock?: Clock;
}

async function waitForState(
  client: TritonHttpClient,
  name: string,
  want: "READY" | "GONE",
  timeoutMs: number,
  clock: Clock,
  signal?: AbortSignal,
): Promise<void> {
  const deadline = clock.now() + timeoutMs;
  for (;;) {
    if (signal?.aborted) return;
    const entry = (await client.repositoryIndex()).find((e) => e.name === name);
    if (want === "READY") {
      if (entry?.state === "READY") return;
      if (entry?.state === "UNAVAILABLE" && entry.reason && entry.reason !== "unloaded") {
        throw new VariantError(`the variant ${name} failed to load: ${entry.reason}`, {
          hint: "The variant's config is shown by `triton-dev perf --json`; check it with `triton-dev lint`.",
        });
      }
    } else if (entry?.state === "UNAVAILABLE") return;
    // In poll mode the index stops listing a model as soon as its folder is gone, while Triton
    // serves it until its next poll: only the model's own readiness says it is unloaded.
    else if (!entry && !(await client.isModelReady(name).catch(() => false))) return;
    if (clock.now() > deadline) {
      if (want === "READY")
        throw new VariantError(
          `the variant ${name} was not READY after ${Math.round(timeoutMs / 1000)} s (state ${entry?.state ?? "not listed"})`,
        );
      return;
    }
    await clock.sleep(250);
  }
}

/**
 * Publish a variant into the served (staging) repository as a sibling model: built in a scratch
 * folder beside the repository, renamed into place in one step, so Triton never sees it half
 * written; then wait until Triton serves it. `onPublished` marks the moment it is in place (the
 * rest is Triton's load).
 */
export async function stageVariant(
  t: StagingTarget,
  original: string,
  v: Variant,
  timeoutMs = 180_000,
  signal?: AbortSignal,
  onPublished?: () => void,
): Promise<void> {
  if (v.configText === undefined) return;
  const scratch = path.join(path.dirname(t.repository), ".publish");
  const shadow = path.join(scratch, `perf-${process.pid}-${Date.now()}`);
  const tmp = path.join(shadow, v.servedModel);
  const target = path.join(t.repository, v.servedModel);
  try {
    await copyTree(path.join(t.repository, original), tmp);
    await fsp.writeFile(path.join(tmp, "config.pbtxt"), v.configText);
    await lintVariant(t, shadow, v);
    if (fs.existsSync(target)) await removeDir(target, scratch);
    await fsp.rename(tmp, target);
  } finally {
    await fsp.rm(shadow, { recursive: true, force: true });
  }
  onPublished?.();
  if (t.reload === "explicit") await t.client.loadModel(v.servedModel);
  await waitForState(t.client, v.servedModel, "READY", timeoutMs, t.clock ?? REAL_CLOCK, signal);
}

/**
 * Lint the variant beside the models it is served with (links to them in `shadow`, so an
 * ensemble variant finds its steps): Triton would refuse a broken config only after a poll, and
 * then only name it in its log.
 */
async function lintVariant(t: StagingTarget, shadow: string, v: Variant): Promise<void> {
  for (const m of await fsp.readdir(t.repository)) {
    if (m !== v.servedModel && !m.startsWith(".")) await fsp.symlink(path.join(t.repository, m), path.join(shadow, m));
  }
  // The variant is served next, its code run by Triton: its auto_complete_config is checked first.
  const result = await lintModel(shadow, v.servedModel, { completer: sharedConfigCompleter(), ...t.lint });
  const errors =
    result.models.find((m) => m.name === v.servedModel)?.diagnostics.filter((d) => d.severity === "error") ?? [];
  if (errors.length === 0) return;
  const staged = path.join(shadow, v.servedModel, "config.pbtxt");
  const shown = errors.map((d) =>
    formatDiagnostic(v.sourceFile && d.file === staged ? { ...d, file: v.sourceFile } : d),
  );
  throw new VariantError(
    `the variant ${v.label} has ${errors.length} error(s), so it was not staged\n${shown.join("\n")}`,
    {
      hint: v.sourceFile
        ? `Fix ${v.sourceFile} (\`triton-dev lint\` checks a repository the same way).`
        : "The variant is derived from the served config; check it with `triton-dev lint`.",
    },
  );
}

async function removeDir(dir: string, scratch: string): Promise<void> {
  const old = path.join(scratch, `old-${path.basename(dir)}-${process.pid}-${Date.now()}`);
  await fsp.rename(dir, old);
  await fsp.rm(old, { recursive: true, force: true });
}

/**
 * Poll mode: wait until Triton has settled a published variant's load (READY, or failed), or the
 * time is up. Triton 2.51 must not see a python model's folder vanish while it starts the model's
 * stubs: with two instances, one stub fails to find model.py, the other is waited for for ever,
 * and the poll that would load every later model waits with it, so the server never loads
 * anything again (seen when a Ctrl-C came just after a candidate was published). A variant the
 * poll has not taken up yet is waited for too: the next poll may be reading it at this moment.
 */
async function waitSettled(client: TritonHttpClient, name: string, timeoutMs: number, clock: Clock): Promise<void> {
  const deadline = clock.now() + timeoutMs;
  for (;;) {
    const entry = (await client.repositoryIndex()).find((e) => e.name === name);
    // "unloaded" is an earlier variant's of the same name (a previous tune on this server): this
    // one has not been polled yet.
    if (entry?.state === "READY" || (entry?.state === "UNAVAILABLE" && entry.reason && entry.reason !== "unloaded"))
      return;
    if (clock.now() > deadline) return;
    await clock.sleep(100);
  }
}

/**
 * Take a staged variant away again and wait (briefly) until Triton no longer serves it. In poll
 * mode its folder goes only once Triton has settled its load (`waitSettled`), so a variant
 * removed right after it was published (Ctrl-C) costs at most its load.
 */
export async function removeVariant(
  t: StagingTarget,
  v: Variant,
  timeoutMs = 20_000,
  settleMs = 60_000,
): Promise<void> {
  if (v.configText === undefined) return;
  const clock = t.clock ?? REAL_CLOCK;
  const scratch = path.join(path.dirname(t.repository), ".publish");
  const target = path.join(t.repository, v.servedModel);
  if (t.reload === "poll" && fs.existsSync(target))
    await waitSettled(t.client, v.servedModel, settleMs, clock).catch(() => undefined);
  if (t.reload === "explicit") {
    // Unload first and let it finish: with the folder already gone the index would drop the
    // model while Triton is still unloading it.
    await t.client.unloadModel(v.servedModel).catch(() => undefined);
    await waitForState(t.client, v.servedModel, "GONE", timeoutMs, clock).catch(() => undefined);
  }
  if (fs.existsSync(target)) {
    await fsp.mkdir(scratch, { recursive: true });
    await removeDir(target, scratch);
  }
  await waitForState(t.client, v.servedModel, "GONE", timeoutMs, clock).catch(() => undefined);
}
