import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { clusterGpus, objectName, REQUIRED_RIGHTS } from "../../../src/runtimes/cluster/settings.js";
import { ROOT } from "../../helpers/cli.js";

describe("the cluster runtime's settings", () => {
  it("the README's Role grants exactly the rights `up` checks for", () => {
    const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
    const section = readme.slice(readme.indexOf("## cluster runtime"));
    const yaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
    expect(yaml).toBeDefined();
    const role = parse(yaml!) as {
      kind: string;
      rules: Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
    };
    expect(role.kind).toBe("Role");
    const granted = role.rules.flatMap((r) =>
      r.resources.flatMap((res) =>
        r.apiGroups.flatMap((g) => r.verbs.map((verb) => `${verb} ${g ? `${res}.${g}` : res}`)),
      ),
    );
    expect(granted.sort()).toEqual(REQUIRED_RIGHTS.map((r) => `${r.verb} ${r.resource}`).sort());
  });

  it("names each run's objects after its id, as a DNS label", () => {
    expect(objectName("20261204T153000-abc123")).toBe("triton-dev-20261204t153000-abc123");
    expect(objectName("x".repeat(80))).toHaveLength(63);
  });

  it("asks for GPUs by count", () => {
    expect(clusterGpus({ kind: "none" })).toBe(0);
    expect(clusterGpus({ kind: "count", count: 2 })).toBe(2);
    expect(() => clusterGpus({ kind: "all" })).toThrow(/--gpus all cannot be honoured by the cluster runtime/);
  });
});
