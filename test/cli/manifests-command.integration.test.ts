import { describe, expect, it } from "vitest";
import { renderManifests, type K8sObject } from "../../src/k8s/manifests.js";
import { DEFAULT_IMAGE } from "../../src/runtimes/docker/settings.js";
import { runCli } from "../helpers/cli.js";

// The unit tests of `triton-dev manifests` (manifests-command.test.ts) call main() in-process;
// this one runs the built CLI (dist/, `npm run build`).
describe("triton-dev manifests: stdout", () => {
  it("the built binary prints the same as the library renders", async () => {
    const r = await runCli(["manifests", "--gpus", "0", "--json"], { ...process.env, TRITON_DEV_LOG: "warn" });
    expect(r.code, r.stderr).toBe(0);
    const expected = renderManifests({
      name: "triton-inference-server",
      image: DEFAULT_IMAGE,
      gpus: 0,
      pollSecs: 30,
      modelSource: { kind: "pvc", claimName: "triton-models" },
      shmSize: "1Gi",
      serviceMonitor: true,
    });
    expect(JSON.parse(r.stdout) as K8sObject[]).toEqual(expected);
  });
});
