import { Command } from "commander";
import { parsePositiveInt } from "./options.js";
import type { CliContext } from "./output.js";

export function registerRunCommands(program: Command, ctx: CliContext): void {
  program
    .command("down")
    .description("Stop the Triton that `up` started (also cleans up after a crashed run).")
    .option("--json", "print the result as JSON", false)
    .action(async (flags: { json: boolean }) => (await import("./down-action.js")).downAction(flags, ctx));

  program
    .command("status")
    .description("Show the running server: runtime, endpoints, and each model's version, state and reason.")
    .option("--json", "print as JSON", false)
    .action(async (flags: { json: boolean }) => (await import("./status-action.js")).statusAction(flags, ctx));

  program
    .command("logs")
    .description("Print Triton's log for the current (or last) run.")
    .option("-f, --follow", "keep printing new lines until the server stops or Ctrl-C", false)
    .option("-n, --lines <n>", "how many recent lines to print first", parsePositiveInt("--lines"), 200)
    .action(async (flags: { follow: boolean; lines: number }) =>
      (await import("./logs-action.js")).logsAction(flags, ctx),
    );
}
