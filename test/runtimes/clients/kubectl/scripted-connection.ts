import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll } from "vitest";
import { FakeClock } from "../../../../src/fake-clock.js";
import { PodConnection } from "../../../../src/runtimes/clients/kubectl/connection.js";
import type { KubectlTools } from "../../../../src/runtimes/clients/kubectl/tools.js";
import type { Ports } from "../../../../src/runtimes/driver.js";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/**
 * A PodConnection of run r1 in kind cluster c, talking to scripted kubectl `tools` on `clock`, with
 * its log and run folder in a temporary folder the file's tests remove when they end.
 */
export function scriptedConnection(
  tools: KubectlTools,
  clock = new FakeClock(),
  ports: Ports = { http: 1, grpc: 2, metrics: 3 },
): PodConnection {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "triton-dev-conn-"));
  dirs.push(dir);
  return new PodConnection({
    tools,
    cluster: "c",
    context: "kind-c",
    namespace: "triton-dev",
    runId: "r1",
    image: "img",
    ports,
    host: "127.0.0.1",
    logFile: path.join(dir, "log"),
    runDir: dir,
    resume: false,
    clock,
  });
}
