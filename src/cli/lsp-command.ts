import { Command } from "commander";
import type { CliContext } from "./output.js";
import type { LspFlags } from "./lsp-action.js";

export function registerLspCommand(program: Command, ctx: CliContext): Command {
  return program
    .command("lsp")
    .description(
      "Run a language server for config.pbtxt over stdin/stdout (for editors): lint as you type, completion, hover, go to definition, quick fixes, formatting, and a running `up`'s verdict.",
    )
    .option("--stdio", "talk over stdin and stdout (the only transport; editors pass it)")
    .option(
      "--disable-auto-complete-config",
      "check as Triton runs with this flag: configs are not completed (a model needs its config.pbtxt)",
    )
    .action(async (flags: LspFlags) => {
      ctx.exitCode = await (await import("./lsp-action.js")).runLsp(flags, ctx.env, undefined, ctx.output);
    });
}
