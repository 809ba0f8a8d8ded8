import { Command, Option } from "commander";
import type { CliContext } from "./output.js";
import type { LintDeps, LintFlags } from "./lint-action.js";
import { RUNTIME_KINDS } from "../runtimes/kinds.js";

export function registerLintCommand(program: Command, ctx: CliContext, deps: Omit<LintDeps, "output"> = {}): Command {
  const output = ctx.output;
  return program
    .command("lint")
    .description("Check a model repository the way Triton will: configs, version folders, model files and ensembles.")
    .argument("[dir]", "the model repository", "models")
    .option("--json", "print the diagnostics (or, with --list-rules, the rules) as JSON", false)
    .option(
      "--list-rules",
      "list every code any command reports, with its severity, the commands and what it means, and check nothing",
    )
    .addOption(
      new Option("--runtime <runtime>", "also check that this runtime has every backend the models need").choices(
        RUNTIME_KINDS,
      ),
    )
    .option(
      "--image <ref>",
      "with --runtime docker, kind or cluster: check for the backends of this image, as `up --image` runs it (an NGC flavour such as 24.10-vllm-python-py3 is known)",
    )
    .option("--gpu", "check as if this machine had a GPU")
    .option("--no-gpu", "check as if this machine had no GPU")
    .option(
      "--disable-auto-complete-config",
      "check as Triton runs with this flag: configs are not completed (a model needs its config.pbtxt)",
    )
    .option(
      "--run-model-code",
      "run python models' auto_complete_config (their model.py) to check the config it completes, as Triton will; without it lint runs no code from the repository and says which configs it could not check",
    )
    .option(
      "--explain <model>",
      "print MODEL's config as Triton holds it once auto-complete has filled it in from the model file",
    )
    .action(async (dir: string, flags: LintFlags) => {
      ctx.exitCode = await (await import("./lint-action.js")).runLint(dir, flags, { ...deps, output });
    });
}
