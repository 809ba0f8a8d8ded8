import { readFileSync } from "node:fs";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * Files that use the Kubernetes fixtures (a control plane, a node, a kind node image: Go binaries
 * built from source, the longest part of a cold CI run) run after every other file. `.ci/run`
 * builds those fixtures in the background while the rest of the suite runs, and a file that needs
 * them waits in its harness for the build (each fixture's build.sh holds a lock while it builds).
 * Known by what the file imports, so there is no list to keep up to date.
 */
const USES_KUBERNETES_FIXTURES = /fixtures\/(k8s-control-plane|k8s-node|kind-node)\/harness/;

export function usesKubernetesFixtures(file: string, read = (f: string) => readFileSync(f, "utf8")): boolean {
  try {
    return USES_KUBERNETES_FIXTURES.test(read(file));
  } catch {
    return false;
  }
}

export default class FixturesLastSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const late = sorted.filter((s) => usesKubernetesFixtures(s.moduleId));
    return [...sorted.filter((s) => !late.includes(s)), ...late];
  }
}
