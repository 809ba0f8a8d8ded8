import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { podRunAlive } from "../../../../src/runtimes/clients/kubectl/liveness.js";
import { KubectlTools } from "../../../../src/runtimes/clients/kubectl/tools.js";

/**
 * A real `kubectl` on PATH (a shell script) that answers slowly the first time, as a cluster on a
 * busy machine does, or fails at once, as one that is gone does. Each call is counted in a file.
 */
let dir: string;
const ref = { runId: "r1", kind: { context: "kind-x", namespace: "triton-dev" } };

async function kubectl(body: string): Promise<KubectlTools> {
  await fsp.writeFile(path.join(dir, "kubectl"), `#!/bin/sh\necho call >> "${dir}/calls"\n${body}\n`, { mode: 0o755 });
  return new KubectlTools(undefined, { PATH: `${dir}:/usr/bin:/bin` });
}
const calls = async () =>
  (await fsp.readFile(path.join(dir, "calls"), "utf8").catch(() => "")).split("\n").filter(Boolean).length;

beforeEach(async () => {
  dir = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-liveness-"));
});
afterEach(async () => {
  await fsp.rm(dir, { recursive: true, force: true });
});

describe("podRunAlive", () => {
  it("asks once more, with more time, when kubectl ran out of time: a slow cluster is not a dead run", async () => {
    // `exec`: the timeout's kill reaches the sleeping process itself, as it reaches a real kubectl
    // (a shell's child would keep the output pipe open until it ended by itself).
    const tools = await kubectl(
      `if [ ! -e "${dir}/slow-once" ]; then touch "${dir}/slow-once"; exec sleep 5; fi\necho deployment.apps/triton`,
    );
    // The first ask's time runs out while kubectl sleeps; the second has SLOW_CLUSTER_MS.
    expect(await podRunAlive(ref, tools, 100)).toBe(true);
    expect(await calls()).toBe(2);
  });

  it("takes a kubectl that fails at once, or lists nothing, for a run that is gone, without asking again", async () => {
    expect(await podRunAlive(ref, await kubectl('echo "error: context kind-x not found" >&2; exit 1'), 300)).toBe(
      false,
    );
    expect(await calls()).toBe(1);
    expect(await podRunAlive(ref, await kubectl("true"), 300)).toBe(false);
    expect(await calls()).toBe(2);
  });
});
