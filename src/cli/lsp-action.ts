import { resolvePaths } from "../config/paths.js";
import { startLspServer } from "../lsp/server.js";

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
): Promise<number> {
  const server = startLspServer({
    ...io,
    paths: resolvePaths(env),
    ...(flags.disableAutoCompleteConfig ? { lint: { autoComplete: false } } : {}),
  });
  await server.closed;
  return 0;
}
