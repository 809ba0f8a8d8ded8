import fs from "node:fs";
import { REAL_CLOCK, type Clock } from "../clock.js";
import { resolvePaths } from "../config/paths.js";
import { UserError } from "../errors.js";
import { followFile, tailLines } from "../state/log-file.js";
import { currentRun, runAlive } from "../session/current-run.js";
import { userPathsOf } from "../state/staged-paths.js";
import type { CliContext } from "./output.js";

/** `triton-dev logs`, loaded when the command runs. */
export async function logsAction(
  flags: { follow: boolean; lines: number },
  ctx: CliContext,
  clock: Clock = REAL_CLOCK,
): Promise<void> {
  const { output, env } = ctx;
  const paths = resolvePaths(env);
  const run = await currentRun(paths, env);
  if (!run) {
    throw new UserError("nothing is running, so there is no log to show", {
      hint: "Start Triton with `triton-dev up`.",
    });
  }
  const file = run.state.logFile;
  // Triton names the staging copy of each model (a traceback's model.py); the user's files are shown.
  const userPaths = userPathsOf(run.state, { raw: true });
  for (const l of await tailLines(file, flags.lines, 4 * 1024 * 1024)) output.out(userPaths(l));
  if (!flags.follow) return;
  const size = fs.existsSync(file) ? fs.statSync(file).size : 0;
  await new Promise<void>((resolve) => {
    const stopFollow = followFile(file, size, (l) => output.out(userPaths(l)), undefined, clock);
    const finish = () => {
      stopFollow();
      clock.clearInterval(check);
      process.off("SIGINT", finish);
      resolve();
    };
    const check = clock.setInterval(() => {
      void runAlive(paths, run.state, env).then((alive) => {
        if (alive) return;
        clock.clearInterval(check);
        output.out("(the server stopped)");
        // The log's last lines are read (the follower's next poll) before it stops.
        clock.setTimeout(finish, 400);
      });
    }, 1000);
    process.on("SIGINT", finish);
  });
}
