// Runs `triton-dev perf ...` from the built files, for tests (and bench/) to use while the command
// is not reachable through dist/cli/main.js: the same Commander wiring and error reporting as main.
import { Command } from "commander";
import { registerPerfCommand } from "../../dist/cli/perf-command.js";
import { processOutput } from "../../dist/cli/output.js";
import { reportError } from "../../dist/cli/main.js";

const ctx = { output: processOutput, env: process.env, exitCode: 0 };
const program = new Command("triton-dev").exitOverride();
registerPerfCommand(program, ctx);
for (const c of program.commands) c.exitOverride();
try {
  await program.parseAsync(process.argv.slice(2), { from: "user" });
  process.exitCode = ctx.exitCode;
} catch (err) {
  process.exitCode = reportError(err, processOutput);
}
