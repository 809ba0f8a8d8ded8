#!/usr/bin/env node
import { Command, CommanderError } from "commander";
import { REPORT_URL_HINT, UserError, fsUserError } from "../errors.js";
import { registerSuperviseCommand, registerUpCommand } from "./up-command.js";
import { registerDashboardCommand } from "./dashboard-command.js";
import { registerInitCommand } from "./init-command.js";
import { registerLintCommand } from "./lint-command.js";
import { registerLspCommand } from "./lsp-command.js";
import { registerManifestsCommand } from "./manifests-command.js";
import { registerPerfCommand } from "./perf-command.js";
import { registerTuneCommand } from "./tune-command.js";
import { registerRunCommands } from "./run-commands.js";
import { registerSetupCommands } from "./setup-commands.js";
import { processOutput, type CliContext, type Output } from "./output.js";

export const VERSION = "0.1.0";

/**
 * Every command is defined up front (commander needs its name, options and description for
 * parsing and --help), but what it does lives in an `*-action.ts` module that its action
 * imports when the command runs: importing the actions here would load Docker's client, zod,
 * Ink and the gRPC and protobuf code before `--help` prints anything. Definition modules must
 * stay light (commander, ./options.js, ./defaults.js); test/cli/startup-imports.integration.test.ts checks
 * what each command loads.
 */
export function buildProgram(ctx: CliContext): Command {
  const { output } = ctx;
  const program = new Command("triton-dev")
    .description("A live NVIDIA Triton Inference Server on your workstation, in step with the models you edit.")
    .version(VERSION)
    .showHelpAfterError("(run with --help for usage)")
    .configureOutput({ writeOut: (s) => output.out(s.trimEnd()), writeErr: (s) => output.err(s.trimEnd()) })
    .exitOverride();
  registerUpCommand(program, ctx);
  registerSuperviseCommand(program, ctx);
  registerRunCommands(program, ctx);
  registerDashboardCommand(program, ctx);
  registerSetupCommands(program, ctx);
  registerLintCommand(program, ctx);
  registerLspCommand(program, ctx);
  registerManifestsCommand(program, ctx);
  registerInitCommand(program, ctx);
  registerPerfCommand(program, ctx);
  registerTuneCommand(program, ctx);
  for (const c of program.commands)
    c.exitOverride().configureOutput({
      writeOut: (s) => output.out(s.trimEnd()),
      writeErr: (s) => output.err(s.trimEnd()),
    });
  return program;
}

export function reportError(err: unknown, output: Output): number {
  if (err instanceof CommanderError) {
    // Commander already printed its message; --help and --version exit 0.
    return err.exitCode === 0 ? 0 : 2;
  }
  // A full disk or an unreadable file met where nothing explained it is still no crash.
  err = fsUserError(err) ?? err;
  if (err instanceof UserError) {
    output.err(`error: ${err.message}`);
    if (err.hint) output.err(`  hint: ${err.hint}`);
    return err.exitCode;
  }
  output.err(`internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  output.err(REPORT_URL_HINT);
  return 70;
}

export async function main(
  argv: string[],
  output: Output = processOutput,
  env: NodeJS.ProcessEnv = process.env,
  entry?: string,
): Promise<number> {
  const ctx: CliContext = { output, env, exitCode: 0, ...(entry ? { entry } : {}) };
  const program = buildProgram(ctx);
  try {
    await program.parseAsync(argv, { from: "user" });
    return ctx.exitCode;
  } catch (err) {
    return reportError(err, output);
  }
}

// Run as the program (dist/cli/main.js, or the bundle, whose every module is this one file): the
// running file is what a detached run's watcher is started from.
const running = process.argv[1] ? (await import("node:fs")).realpathSync(process.argv[1]) : undefined;
if (running && import.meta.url === new URL(`file://${running}`).href) {
  const code = await main(process.argv.slice(2), processOutput, process.env, running);
  process.exitCode = code;
}
