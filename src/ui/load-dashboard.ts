import type { openDashboard } from "./dashboard.js";

/**
 * Load the dashboard (React, Ink) only when it opens, with React's production build: the
 * development build, chosen unless NODE_ENV says otherwise, costs several times the CPU and
 * memory per render. NODE_ENV is put back afterwards so that Triton and the python stubs
 * started later do not inherit it.
 */
export async function loadDashboard(env: NodeJS.ProcessEnv = process.env): Promise<typeof openDashboard> {
  const had = Object.prototype.hasOwnProperty.call(env, "NODE_ENV");
  if (!had) env.NODE_ENV = "production";
  try {
    return (await import("./dashboard.js")).openDashboard;
  } finally {
    if (!had) delete env.NODE_ENV;
  }
}
