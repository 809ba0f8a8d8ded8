import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Command, Option } from "commander";
import { resolvePaths } from "../config/paths.js";
import { EventBus } from "../events/bus.js";
import { startSession, type UpOptions } from "../session/session.js";
import type { SessionEvent } from "../session/events.js";
import { stripTritonPrefix, tailLines } from "../state/log-file.js";
import { removeRunState } from "../state/run-state.js";
import { recordSupervisor, runSupervisor, spawnSupervisor, waitForSupervisor } from "../session/supervisor.js";

// The running CLI's own entry (dist/cli/main.js, or a single-file bundle), so the supervisor
// of a detached run is the same program.
const CLI_PATH = process.argv[1] && /triton-dev|main\.js$/.test(process.argv[1]) ? fs.realpathSync(process.argv[1]) : fileURLToPath(new URL("./main.js", import.meta.url));
import { parsePort, parsePositiveInt } from "./options.js";
import { printEvents, type CliContext } from "./output.js";

interface UpFlags {
  runtime: UpOptions["runtime"];
  models: string;
  reload: UpOptions["reload"];
  pollSecs: number;
  httpPort: number;
  grpcPort: number;
  metricsPort: number;
  host: string;
  detach: boolean;
  ui: boolean;
  json: boolean;
  timeout: number;
}

export function registerUpCommand(program: Command, ctx: CliContext): void {
  const { output, env } = ctx;
  program
    .command("up")
    .description("Start Triton on your model repository and keep it running (Ctrl-C stops it).")
    .addOption(new Option("--runtime <runtime>", "where Triton runs").choices(["auto", "local", "docker", "kind"]).default("auto"))
    .option("--models <dir>", "the model repository to serve", "models")
    .addOption(new Option("--reload <mode>", "how Triton picks up changes: poll (as in the article) or explicit").choices(["poll", "explicit"]).default("poll"))
    .option("--poll-secs <n>", "poll interval in seconds (poll mode)", parsePositiveInt("--poll-secs"), 1)
    .option("--http-port <n>", "HTTP port", parsePort("--http-port"), 8000)
    .option("--grpc-port <n>", "gRPC port", parsePort("--grpc-port"), 8001)
    .option("--metrics-port <n>", "Prometheus metrics port", parsePort("--metrics-port"), 8002)
    .option("--host <address>", "address the endpoints listen on (loopback unless you ask otherwise)", "127.0.0.1")
    .option("--detach", "return once every model has loaded; stop it later with `triton-dev down`", false)
    .option("--no-ui", "print plain progress lines instead of the dashboard")
    .option("--json", "print events as JSON lines", false)
    .option("--timeout <seconds>", "how long to wait for Triton and its models to be ready", parsePositiveInt("--timeout"), 180)
    .action(async (flags: UpFlags) => {
      const paths = resolvePaths(env);
      const bus = new EventBus<SessionEvent>();
      bus.on(printEvents(output, flags.json));
      const session = await startSession(
        paths,
        {
          runtime: flags.runtime,
          modelsDir: path.resolve(flags.models),
          reload: flags.reload,
          pollSecs: flags.pollSecs,
          ports: { http: flags.httpPort, grpc: flags.grpcPort, metrics: flags.metricsPort },
          host: flags.host,
          detached: flags.detach,
          readyTimeoutMs: flags.timeout * 1000,
        },
        bus,
        env,
      );
      const failed = [...session.models.filter((m) => m.state !== "READY").map((m) => m.name), ...session.refused];
      if (flags.detach) {
        session.handle.release();
        const pid = spawnSupervisor(session.state, CLI_PATH, env);
        await recordSupervisor(paths, session.state, pid);
        if (!(await waitForSupervisor(session.state, pid))) {
          output.err(`hot reload did not start for this detached run; see ${path.join(session.state.runDir, "supervisor.log")}. Triton itself is running.`);
        }
        if (failed.length > 0) {
          output.err(`${failed.length} model(s) failed to load: ${failed.join(", ")} (reasons above). The server keeps serving the others and reloads each model when you save a fix; stop it with \`triton-dev down\`.`);
          ctx.exitCode = 1;
        } else if (!flags.json) {
          output.out("running in the background: `triton-dev status`, `triton-dev logs -f`, `triton-dev down`");
        }
        return;
      }
      await session.watch();
      if (!flags.json) output.out("serving; press Ctrl-C to stop");
      await new Promise<void>((resolve) => {
        let stoppingOnSignal = false;
        const onSignal = (sig: NodeJS.Signals) => {
          stoppingOnSignal = true;
          process.off("SIGINT", onSignal);
          process.off("SIGTERM", onSignal);
          process.off("SIGHUP", onSignal);
          void session.stop(`received ${sig}`).then(resolve);
        };
        process.on("SIGINT", onSignal);
        process.on("SIGTERM", onSignal);
        process.on("SIGHUP", onSignal);
        void session.handle.exited.then(async (e) => {
          if (stoppingOnSignal) return;
          process.off("SIGINT", onSignal);
          process.off("SIGTERM", onSignal);
          process.off("SIGHUP", onSignal);
          // Stopped from another shell (`down`) or crashed: either way the run is over.
          const lines = (await tailLines(session.state.logFile, 8)).map(stripTritonPrefix);
          bus.emit({ type: "server-exited", code: e.code, signal: e.signal, lastLines: lines });
          await removeRunState(paths);
          if (e.signal !== "SIGTERM" && e.code !== 0) ctx.exitCode = 1;
          resolve();
        });
      });
    });
}

/** Internal: the hot-reload process a detached `up` leaves behind. */
export function registerSuperviseCommand(program: Command, ctx: CliContext): void {
  program
    .command("__supervise", { hidden: true })
    .description("internal: hot reload for a detached run")
    .action(async () => {
      await runSupervisor(resolvePaths(ctx.env), printEvents(ctx.output, false));
    });
}
