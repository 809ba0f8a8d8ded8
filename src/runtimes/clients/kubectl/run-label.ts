/**
 * The label every object of a run carries in any cluster (kind's or the user's): a run's objects
 * are found, followed and deleted by it, never by name.
 */
export const RUN_LABEL = "triton-dev.io/run";

export function runSelector(runId: string): string {
  return `${RUN_LABEL}=${runId}`;
}
