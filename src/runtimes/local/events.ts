/** How the local runtime's own events read. */
import type { DriverEvent } from "../driver.js";
import type { SetupProgress } from "./environment.js";

/**
 * The managed environment being installed (first use): each step, and of pip's own output only
 * its closing "Successfully installed ..." line as a plain line; the dashboard shows every line.
 */
export function setupEvent(progress: SetupProgress): DriverEvent {
  const line = progress.line
    ? progress.line.startsWith("Successfully")
      ? `setup: ${progress.line}`
      : undefined
    : `setup: ${progress.message}`;
  return {
    type: "setup",
    runtime: "local",
    progress,
    reads: { ...(line !== undefined ? { line } : {}), status: `setup: ${progress.line ?? progress.message}` },
  };
}
