import { describe, expect, it } from "vitest";
import * as defaults from "../../src/cli/defaults.js";
import { DEFAULT_NAME, REPOSITORY_KEY_SECRET_KEY } from "../../src/k8s/manifests.js";
import { DEFAULT_IMAGE } from "../../src/runtimes/docker/settings.js";
import { DEFAULT_CLUSTER } from "../../src/runtimes/kind/settings.js";
import { REPOSITORY_KEY_HEADER } from "../../src/triton/http-client.js";

// src/cli/defaults.ts copies these so that --help need not load their modules.
describe("the command definitions' copies of defaults", () => {
  it("equal the values their modules define", () => {
    expect({ ...defaults }).toEqual({
      DEFAULT_IMAGE,
      DEFAULT_CLUSTER,
      DEFAULT_MANIFEST_NAME: DEFAULT_NAME,
      REPOSITORY_KEY_SECRET_KEY,
      REPOSITORY_KEY_HEADER,
    });
  });
});
