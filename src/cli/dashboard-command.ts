import { Command } from "commander";
import type { CliContext } from "./output.js";
import type { DashboardFlags } from "./dashboard-action.js";

/**
 * `triton-dev dashboard`: the dashboard of a run started elsewhere (`up --detach`, or a
 * foreground `up` in another terminal). Quitting it leaves the server running; `r` asks the
 * detached run's watcher to reload. Without a terminal it follows the run's events as lines.
 */
export function registerDashboardCommand(program: Command, ctx: CliContext): void {
  program
    .command("dashboard")
    .description("Open the dashboard on the running triton-dev (after `up --detach`); quitting leaves Triton running.")
    .option("--no-ui", "follow the run's events as plain lines instead (until Ctrl-C)")
    .option("--json", "follow the run's events as JSON lines", false)
    .action(async (flags: DashboardFlags) => (await import("./dashboard-action.js")).dashboardAction(flags, ctx));
}
