import path from "node:path";
import { describe, expect, it } from "vitest";
import { usesKubernetesFixtures } from "./fixtures-last-sequencer.js";

const root = path.resolve(import.meta.dirname, "..", "..");

describe("which test files wait for the Kubernetes fixtures (they run last in CI)", () => {
  it("knows them by the harness they import", () => {
    for (const f of [
      "test/integration/cluster.test.ts",
      "test/integration/cluster-node.test.ts",
      "test/integration/kind-real.test.ts",
      "test/k8s/k8s-apiserver.integration.test.ts",
      "test/runtimes/kind/kind-apiserver.integration.test.ts",
    ]) {
      expect(usesKubernetesFixtures(path.join(root, f)), f).toBe(true);
    }
    // kind.test.ts runs the kind runtime against a stand-in kind on the Docker daemon: no Go build.
    for (const f of [
      "test/integration/up.test.ts",
      "test/integration/kind.test.ts",
      "test/integration/docker.test.ts",
    ]) {
      expect(usesKubernetesFixtures(path.join(root, f)), f).toBe(false);
    }
  });

  it("counts a file it cannot read as not waiting", () => {
    expect(usesKubernetesFixtures(path.join(root, "no-such-file.test.ts"))).toBe(false);
  });
});
