import { Command } from "commander";
import { parsePort } from "./options.js";
import type { CliContext } from "./output.js";

export function registerSetupCommands(program: Command, ctx: CliContext): void {
  program
    .command("setup")
    .description(
      "Install the embedded Triton (a managed Python environment with the nvidia-pytriton wheel). `up` runs it on first use.",
    )
    .option("--force", "reinstall even if the environment looks complete", false)
    .option(
      "--repair",
      "put back the pinned packages (numpy 1.x) and the python backend stub without rebuilding the environment",
      false,
    )
    .option(
      "--with-site-packages",
      "let models import the packages of the Python found (e.g. an installed torch with CUDA)",
      false,
    )
    .option("--json", "print progress as JSON lines", false)
    .action(async (flags: { force: boolean; repair: boolean; json: boolean; withSitePackages: boolean }) =>
      (await import("./setup-action.js")).setupAction(flags, ctx),
    );

  program
    .command("doctor")
    .description(
      "Check what triton-dev needs: Python, glibc, the managed environment, ports; Docker, its NVIDIA runtime and the GPUs; kind and kubectl.",
    )
    .option("--json", "print the checks as JSON", false)
    .option("--http-port <n>", "HTTP port to check", parsePort("--http-port"), 8000)
    .option("--grpc-port <n>", "gRPC port to check", parsePort("--grpc-port"), 8001)
    .option("--metrics-port <n>", "metrics port to check", parsePort("--metrics-port"), 8002)
    .action(async (flags: { json: boolean; httpPort: number; grpcPort: number; metricsPort: number }) =>
      (await import("./doctor-action.js")).doctorAction(flags, ctx),
    );
}
