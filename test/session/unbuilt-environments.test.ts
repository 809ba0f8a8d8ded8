import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { unbuiltEnvironmentWarnings } from "../../src/session/session.js";
import { pythonModel, removeTempRepos, tempRepo, writeFiles } from "../repo/helpers.js";

afterAll(removeTempRepos);

describe("a runtime that builds no environments", () => {
  it("warns for each served model with a requirements.txt, naming the runtime and the fix", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, {
      ...pythonModel("with_deps"),
      "with_deps/requirements.txt": "tdgreet==1.0\n",
      ...pythonModel("plain"),
      // Only the model folder's file counts, as on the local runtime.
      ...pythonModel("in_version"),
      "in_version/1/requirements.txt": "tdgreet==1.0\n",
    });
    const warnings = unbuiltEnvironmentWarnings("docker", repo, ["in_version", "plain", "with_deps"]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      severity: "warning",
      code: "requirements-not-installed",
      model: "with_deps",
      file: path.join(repo, "with_deps", "requirements.txt"),
    });
    expect(warnings[0]!.message).toMatch(/not installed on the docker runtime/);
    expect(warnings[0]!.hint).toMatch(/--image.*--runtime local/);
  });
});
