import { Command } from "commander";
import type { CliContext } from "./output.js";
import type { InitFlags } from "./init-action.js";

export function registerInitCommand(program: Command, ctx: CliContext): Command {
  const output = ctx.output;
  return program
    .command("init")
    .description("Scaffold a python backend model (config.pbtxt and 1/model.py) in a model repository.")
    .argument("[dir]", "the model repository (created if missing)", "models")
    .option("--name <name>", "the model's name and folder", "my_model")
    .action(async (dir: string, flags: InitFlags) => {
      ctx.exitCode = await (await import("./init-action.js")).runInit(dir, flags, output);
    });
}
