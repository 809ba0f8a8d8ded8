/** CI systems set one of these; a dashboard there would only fill the job log with frames. */
export function isCi(env: NodeJS.ProcessEnv): boolean {
  const on = (k: string) => env[k] !== undefined && env[k] !== "" && env[k] !== "0" && env[k] !== "false";
  return on("CI") || on("CONTINUOUS_INTEGRATION");
}

export interface DashboardChoice {
  ui: boolean;
  json: boolean;
  detach: boolean;
}

/**
 * The dashboard needs a terminal on both ends (it draws on stdout and reads keys on stdin);
 * anything else (a pipe, a file, CI, --no-ui, --json, --detach) gets the plain event lines.
 */
export function shouldOpenDashboard(
  flags: DashboardChoice,
  env: NodeJS.ProcessEnv,
  stdout: { isTTY?: boolean },
  stdin: { isTTY?: boolean },
): boolean {
  if (!flags.ui || flags.json || flags.detach) return false;
  if (isCi(env) || env.TERM === "dumb") return false;
  return Boolean(stdout.isTTY && stdin.isTTY);
}
