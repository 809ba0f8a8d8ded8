import { Command, Option } from "commander";
import { resolvePaths } from "../config/paths.js";
import { RUNTIME_KINDS, runtimeFlagOptions } from "../runtimes/kinds.js";
import { parseDir, parsePort, parsePositiveInt } from "./options.js";
import { printEvents, type CliContext } from "./output.js";
import type { UpFlags } from "./up-action.js";

export function registerUpCommand(program: Command, ctx: CliContext): void {
  const up = program
    .command("up")
    .description("Start Triton on your model repository and keep it running (Ctrl-C stops it).")
    .addOption(
      new Option("--runtime <runtime>", "where Triton runs").choices(["auto", ...RUNTIME_KINDS]).default("auto"),
    )
    .option("--models <dir>", "the model repository to serve", parseDir("--models"), "models")
    .addOption(
      new Option("--reload <mode>", "how Triton picks up changes: poll (as in the article) or explicit")
        .choices(["poll", "explicit"])
        .default("poll"),
    )
    // Triton reads the interval as a 32-bit number; a day is already far past any use of polling.
    .option("--poll-secs <n>", "poll interval in seconds (poll mode)", parsePositiveInt("--poll-secs", 1, 86_400), 1)
    .option("--http-port <n>", "HTTP port", parsePort("--http-port"), 8000)
    .option("--grpc-port <n>", "gRPC port", parsePort("--grpc-port"), 8001)
    .option("--metrics-port <n>", "Prometheus metrics port", parsePort("--metrics-port"), 8002)
    .option("--host <address>", "address the endpoints listen on (loopback unless you ask otherwise)", "127.0.0.1")
    .option("--detach", "return once every model has loaded; stop it later with `triton-dev down`", false)
    .option(
      "--require-ready",
      "with --detach: exit 1 unless every model of the repository is READY (one that failed to load, was refused or skipped counts)",
      false,
    )
    .option("--no-ui", "print plain progress lines instead of the dashboard")
    .option("--json", "print events as JSON lines", false)
    .option(
      "--timeout <seconds>",
      "how long to wait for Triton and its models to be ready",
      parsePositiveInt("--timeout"),
      180,
    );
  // The runtimes' own flags, as their facts declare them (a switch is off unless given).
  for (const f of runtimeFlagOptions())
    if (f.usage.includes("<")) up.option(f.usage, f.help);
    else up.option(f.usage, f.help, false);
  up.action(async (flags: UpFlags) => (await import("./up-action.js")).upAction(flags, ctx));
}

/** Internal: the hot-reload process a detached `up` leaves behind. */
export function registerSuperviseCommand(program: Command, ctx: CliContext): void {
  program
    .command("__supervise", { hidden: true })
    .description("internal: hot reload for a detached run")
    .action(async () => {
      const { runSupervisor } = await import("../session/supervisor.js");
      await runSupervisor(resolvePaths(ctx.env), printEvents(ctx.output, false), ctx.env);
    });
}
