import { resolvePaths } from "../config/paths.js";
import { detectNvidiaGpus } from "../gpu/detect.js";
import { LspFramingError } from "../lsp/framing.js";
import { startLspServer } from "../lsp/server.js";
import { RUNTIME_KINDS, lintFacts, type RuntimeKind } from "../runtimes/kinds.js";
import type { Output } from "./output.js";

export interface LspFlags {
  stdio?: boolean;
  disableAutoCompleteConfig?: boolean;
}

/**
 * Runs `triton-dev lsp` until the editor stops it. stdout carries the protocol alone: everything
 * else (the logger included) goes to stderr, which editors show as the server's log.
 */
export async function runLsp(
  flags: LspFlags,
  env: NodeJS.ProcessEnv = process.env,
  io: { input: NodeJS.ReadableStream; output: NodeJS.WritableStream } = {
    input: process.stdin,
    output: process.stdout,
  },
  report?: Output,
  exit: (code: number) => void = (code) => process.exit(code),
  detectGpus: () => Promise<number | undefined> = () => detectNvidiaGpus(),
): Promise<number> {
  const server = startLspServer({
    ...io,
    paths: resolvePaths(env),
    ...(flags.disableAutoCompleteConfig ? { settings: { autoComplete: false } } : {}),
    gpuCount: detectGpus,
    runtimeKinds: RUNTIME_KINDS,
    lintFacts: (runtime, image) => lintFacts(runtime as RuntimeKind | undefined, image),
  });
  try {
    await server.closed;
  } catch (err) {
    if (!(err instanceof LspFramingError) || !report) throw err;
    // The protocol library keeps timers of its own (a watch on the editor's process) that would
    // keep a server whose input is lost alive: it is ended here, once the reason is written.
    report.err(`error: ${err.message}`);
    if (err.hint) report.err(`  hint: ${err.hint}`);
    exit(err.exitCode);
    return err.exitCode;
  }
  return 0;
}
