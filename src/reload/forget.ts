import { REAL_CLOCK, type Clock } from "../clock.js";
import fs from "node:fs";
import { log as rootLog } from "../log/logger.js";
import { followFile, stripTritonPrefix } from "../state/log-file.js";
import type { TritonHttpClient } from "../triton/http-client.js";
import { loadOutcome, unloadedVersion } from "../triton/log-lines.js";
import type { StagingRepository } from "./stage.js";

const log = rootLog.child("reload");

/**
 * Triton's /v2/health/ready stays false while any model it ever tried has a version that failed
 * to load, and unloading does not change that: Triton 2.51 unloads only READY versions and keeps a
 * failed one's reason for good. triton-dev stops serving such a model (it is withdrawn until a fix
 * is saved, or its folder was deleted), so Triton has to forget it for its readiness to agree
 * with ours: a load of the same name and versions that succeeds, then an unload, leaves those
 * versions "unloaded", the one state strict readiness accepts. The placeholder loaded for that is
 * a python model with no inputs that never runs a request.
 */
export const PLACEHOLDER_MODEL_PY = `# triton-dev's placeholder: loaded and unloaded at once so that Triton forgets a failed load.
class TritonPythonModel:
    def execute(self, requests):
        return []
`;

/** The placeholder's config: the failed model's name, each version Triton tried, one CPU instance. */
export function placeholderConfig(name: string, versions: readonly string[]): Record<string, unknown> {
  return {
    name,
    backend: "python",
    max_batch_size: 0,
    input: [],
    output: [],
    // Without a kind, a server with GPUs would start a stub per GPU.
    instance_group: [{ kind: "KIND_CPU", count: 1 }],
    version_policy: { specific: { versions: versions.map(Number) } },
  };
}

/** The same config as config.pbtxt, for poll mode, where Triton reads it from the served folder. */
export function placeholderConfigText(name: string, versions: readonly string[]): string {
  return [
    `name: ${JSON.stringify(name)}`,
    'backend: "python"',
    "max_batch_size: 0",
    "instance_group [ { kind: KIND_CPU count: 1 } ]",
    `version_policy: { specific: { versions: [ ${versions.join(", ")} ] } }`,
    "",
  ].join("\n");
}

/** The repository API's load parameters that load the placeholder from request content (explicit mode). */
export function placeholderLoadParameters(name: string, versions: readonly string[]): Record<string, string> {
  const body = Buffer.from(PLACEHOLDER_MODEL_PY).toString("base64");
  return {
    config: JSON.stringify(placeholderConfig(name, versions)),
    ...Object.fromEntries(versions.map((v) => [`file:${v}/model.py`, body])),
  };
}

/** The placeholder's files, relative to its model folder (poll mode). */
export function placeholderFiles(name: string, versions: readonly string[]): Record<string, string> {
  return {
    "config.pbtxt": placeholderConfigText(name, versions),
    ...Object.fromEntries(versions.map((v) => [`${v}/model.py`, PLACEHOLDER_MODEL_PY])),
  };
}

/** The versions to forget: those Triton listed for the model, else version 1 (Triton tried no version folder). */
export function versionsToForget(listed: ReadonlyArray<string | undefined>, folders: readonly string[] = []): string[] {
  const all = new Set([...listed, ...folders].filter((v): v is string => v !== undefined && /^\d+$/.test(v)));
  return all.size ? [...all].sort((a, b) => Number(a) - Number(b)) : ["1"];
}

export interface ForgetContext {
  client: TritonHttpClient;
  staging: StagingRepository;
  mode: "poll" | "explicit";
  pollSecs: number;
  logFile: string;
  loadTimeoutMs: number;
  /** Stop waiting (the controller is closing). */
  closed: () => boolean;
  /** The time the deadline and the log's reads run on (../clock.ts); default: real time. */
  clock?: Clock;
}

/**
 * Have Triton forget the failed load of `name` (see above); true once Triton reported every
 * version unloaded. In poll mode the placeholder is served from the staging repository for one
 * poll, under a snapshot name status and a restarted watcher do not take for the model's own.
 */
export async function forgetFailedLoad(
  ctx: ForgetContext,
  name: string,
  versions: readonly string[],
): Promise<boolean> {
  const deadline =
    (ctx.clock ?? REAL_CLOCK).now() + ctx.loadTimeoutMs + (ctx.mode === "poll" ? 2 * ctx.pollSecs * 1000 : 0);
  let from = fileSize(ctx.logFile);
  try {
    if (ctx.mode === "explicit") {
      await ctx.client.loadModel(name, placeholderLoadParameters(name, versions));
    } else {
      await ctx.staging.publishPlaceholder(name, placeholderFiles(name, versions));
      // A retry of the broken snapshot Triton had begun may still fail; the placeholder's load follows.
      const loaded = await waitForLines(ctx, from, deadline, (line) => loadOutcome(line, name)?.ok === true);
      if (!loaded) {
        log.warn("Triton did not load the placeholder that makes it forget a failed load", { model: name });
        await ctx.staging.remove(name);
        return false;
      }
    }
    from = fileSize(ctx.logFile);
    if (ctx.mode === "explicit") await ctx.client.unloadModel(name);
    else await ctx.staging.remove(name);
    const pending = new Set(versions);
    return await waitForLines(ctx, from, deadline, (line) => {
      const u = unloadedVersion(line);
      if (u?.model === name) pending.delete(u.version);
      return pending.size === 0;
    });
  } catch (err) {
    log.warn("could not have Triton forget a failed load", { model: name, error: String(err) });
    if (ctx.mode === "poll") await ctx.staging.remove(name).catch(() => {});
    return false;
  }
}

/** Resolves true when `done` holds for a log line written after `from`; false at the deadline. */
function waitForLines(
  ctx: ForgetContext,
  from: number,
  deadline: number,
  done: (line: string) => boolean,
): Promise<boolean> {
  const clock = ctx.clock ?? REAL_CLOCK;
  return new Promise((resolve) => {
    let finished = false;
    const finish = (ok: boolean) => {
      if (finished) return;
      finished = true;
      stop();
      clock.clearInterval(timer);
      resolve(ok);
    };
    const stop = followFile(ctx.logFile, from, (raw) => done(stripTritonPrefix(raw)) && finish(true), 20, clock);
    const timer = clock.setInterval(() => (clock.now() >= deadline || ctx.closed()) && finish(false), 50);
  });
}

function fileSize(f: string): number {
  try {
    return fs.statSync(f).size;
  } catch {
    return 0;
  }
}
