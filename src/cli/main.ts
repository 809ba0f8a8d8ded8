#!/usr/bin/env node
import { Command, CommanderError, Option } from "commander";
import { REPORT_URL_HINT, UserError } from "../errors.js";
import { registerUpCommand } from "./up-command.js";
import { registerRunCommands } from "./run-commands.js";
import { registerSetupCommands } from "./setup-commands.js";
import { processOutput, type Output } from "./output.js";

export const VERSION = "0.1.0";

export function buildProgram(output: Output = processOutput, env: NodeJS.ProcessEnv = process.env): Command {
  const program = new Command("triton-dev")
    .description("A live NVIDIA Triton Inference Server on your workstation, in step with the models you edit.")
    .version(VERSION)
    .showHelpAfterError("(run with --help for usage)")
    .configureOutput({ writeOut: (s) => output.out(s.trimEnd()), writeErr: (s) => output.err(s.trimEnd()) })
    .exitOverride();
  registerUpCommand(program, output, env);
  registerRunCommands(program, output, env);
  registerSetupCommands(program, output, env);
  for (const c of program.commands) c.exitOverride().configureOutput({ writeOut: (s) => output.out(s.trimEnd()), writeErr: (s) => output.err(s.trimEnd()) });
  return program;
}

export function reportError(err: unknown, output: Output): number {
  if (err instanceof CommanderError) {
    // Commander already printed its message; --help and --version exit 0.
    return err.exitCode === 0 ? 0 : 2;
  }
  if (err instanceof UserError) {
    output.err(`error: ${err.message}`);
    if (err.hint) output.err(`  hint: ${err.hint}`);
    return err.exitCode;
  }
  output.err(`internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  output.err(REPORT_URL_HINT);
  return 70;
}

export async function main(argv: string[], output: Output = processOutput, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const program = buildProgram(output, env);
  try {
    await program.parseAsync(argv, { from: "user" });
    return typeof process.exitCode === "number" ? process.exitCode : 0;
  } catch (err) {
    return reportError(err, output);
  }
}

// Unused import guard for Option keeps commander's type in scope for subcommands.
void Option;

const invokedDirectly = process.argv[1] && import.meta.url === new URL(`file://${(await import("node:fs")).realpathSync(process.argv[1])}`).href;
if (invokedDirectly) {
  const code = await main(process.argv.slice(2));
  process.exitCode = code;
}
