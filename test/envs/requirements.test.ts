import { describe, expect, it } from "vitest";
import {
  canonicalName,
  environmentKey,
  lineNaming,
  normalizeRequirements,
  parseRequirements,
  type EnvironmentBase,
} from "../../src/envs/requirements.js";

const BASE: EnvironmentBase = {
  pythonVersion: "3.11.7",
  soabi: "cpython-311-x86_64-linux-gnu",
  sitePackages: "/home/u/.cache/triton-dev/venv/lib/python3.11/site-packages",
  pins: ["numpy==1.26.4"],
};

describe("parseRequirements", () => {
  it("reads pip's format: comments, continuations, options, and where each requirement starts", () => {
    const text = [
      "# the model's packages",
      "",
      "  Tokenizers_Lite>=0.3  # fast enough",
      "--extra-index-url https://download.pytorch.org/whl/cpu",
      "torch==2.3.1+cpu \\",
      "    --hash=sha256:abc",
      "pkg @ https://example.com/pkg-1.0.tar.gz#egg=pkg",
    ].join("\n");
    expect(parseRequirements(text)).toEqual([
      { line: 3, column: 3, text: "Tokenizers_Lite>=0.3", name: "tokenizers-lite" },
      { line: 4, column: 1, text: "--extra-index-url https://download.pytorch.org/whl/cpu" },
      { line: 5, column: 1, text: "torch==2.3.1+cpu --hash=sha256:abc", name: "torch" },
      { line: 7, column: 1, text: "pkg @ https://example.com/pkg-1.0.tar.gz#egg=pkg", name: "pkg" },
    ]);
  });

  it("finds the line naming a distribution the way pip compares names", () => {
    const reqs = parseRequirements("numpy>=2\nMy.Package_x==1\n");
    expect(lineNaming(reqs, "my-package-X")?.line).toBe(2);
    expect(lineNaming(reqs, "NumPy")?.line).toBe(1);
    expect(lineNaming(reqs, "scipy")).toBeUndefined();
    expect(canonicalName("Foo__Bar.baz")).toBe("foo-bar-baz");
  });
});

describe("the environment's identity", () => {
  it("ignores order, comments, blank lines and spacing", () => {
    const a = normalizeRequirements("tdgreet==1.0\nrequests  >=2, <3  # http\n");
    const b = normalizeRequirements("\n# deps\nRequests>=2,<3\n\nTdGreet == 1.0");
    expect(a).toEqual(["requests>=2,<3", "tdgreet==1.0"]);
    expect(a).toEqual(b);
    expect(environmentKey(a, BASE)).toBe(environmentKey(b, BASE));
  });

  it("changes with the requirements, the stub's Python, its ABI and its pinned packages", () => {
    const reqs = normalizeRequirements("tdgreet==1.0");
    const key = environmentKey(reqs, BASE);
    expect(environmentKey(normalizeRequirements("tdgreet==2.0"), BASE)).not.toBe(key);
    expect(environmentKey(reqs, { ...BASE, pythonVersion: "3.12.1" })).not.toBe(key);
    expect(environmentKey(reqs, { ...BASE, soabi: "cpython-311-aarch64-linux-gnu" })).not.toBe(key);
    expect(environmentKey(reqs, { ...BASE, pins: ["numpy==1.26.3"] })).not.toBe(key);
    expect(key).toMatch(/^[0-9a-f]{20}$/);
  });

  it("has nothing to build for a file of comments", () => {
    expect(normalizeRequirements("# nothing yet\n\n   \n")).toEqual([]);
  });
});
