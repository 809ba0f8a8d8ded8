import { describe, expect, it } from "vitest";
import { classifyPipFailure, errorExcerpt } from "../../src/envs/pip-errors.js";
import { parseRequirements } from "../../src/envs/requirements.js";

// pip 23.2.1's output (the managed environment's pip), recorded from `pip install --dry-run -r
// requirements.txt -c constraints.txt` against a local wheel folder, constraints `numpy==1.26.4`.
const DIRECT_NUMPY = `Looking in links: /tmp/wheels
ERROR: Cannot install numpy>=2 because these package versions have conflicting dependencies.

The conflict is caused by:
    The user requested numpy>=2
    The user requested (constraint) numpy==1.26.4

To fix this you could try to:
1. loosen the range of package versions you've specified
2. remove package versions to allow pip attempt to solve the dependency conflict

ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/#dealing-with-dependency-conflicts`;

const TRANSITIVE_NUMPY = `INFO: pip is looking at multiple versions of tdneedsnumpy2 to determine which version is compatible with other requirements. This could take a while.
ERROR: Cannot install -r r2.txt (line 1) because these package versions have conflicting dependencies.

The conflict is caused by:
    tdneedsnumpy2 1.0 depends on numpy>=2
    The user requested (constraint) numpy==1.26.4

To fix this you could try to:
1. loosen the range of package versions you've specified
2. remove package versions to allow pip attempt to solve the dependency conflict

ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/#dealing-with-dependency-conflicts`;

const OTHER_PYTHON = `Looking in links: /tmp/wheels
Processing ./wheels/tdfuture-1.0-py3-none-any.whl (from -r r2.txt (line 1))
INFO: pip is looking at multiple versions of tdfuture to determine which version is compatible with other requirements. This could take a while.
ERROR: Package 'tdfuture' requires a different Python: 3.11.7 not in '>=3.13'`;

const NOT_FOUND = `Looking in links: /tmp/wheels
ERROR: Could not find a version that satisfies the requirement doesnotexist==1 (from versions: none)
ERROR: No matching distribution found for doesnotexist==1`;

const ctx = (text: string) => ({
  requirements: parseRequirements(text),
  pins: ["numpy==1.26.4"],
  pythonVersion: "3.11.7",
});
const lines = (s: string) => s.split("\n");

describe("classifyPipFailure", () => {
  it("names a requirement that conflicts with the stub's numpy, its line, and the fix", () => {
    const f = classifyPipFailure(lines(DIRECT_NUMPY), ctx("tdgreet==1.0\nnumpy>=2\n"));
    expect(f.kind).toBe("stub");
    expect(f.culprit?.line).toBe(2);
    expect(f.message).toContain("numpy>=2");
    expect(f.message).toContain("numpy 1.26.4");
    expect(f.hint).toContain("numpy<2");
  });

  it("names the package whose dependency conflicts with the stub", () => {
    const f = classifyPipFailure(lines(TRANSITIVE_NUMPY), ctx("# deps\ntdneedsnumpy2\n"));
    expect(f.kind).toBe("stub");
    expect(f.culprit?.line).toBe(2);
    expect(f.message).toMatch(/^tdneedsnumpy2 1\.0 needs numpy>=2, but the python backend stub needs numpy 1\.26\.4/);
    expect(f.hint).toContain("tdneedsnumpy2");
  });

  it("tells a package that needs another Python", () => {
    const f = classifyPipFailure(lines(OTHER_PYTHON), ctx("tdfuture\n"));
    expect(f.kind).toBe("python");
    expect(f.culprit?.line).toBe(1);
    expect(f.message).toContain("3.11.7");
    expect(f.message).toContain(">=3.13");
    expect(f.hint).toContain("TRITON_DEV_PYTHON");
  });

  it("passes anything else on as pip's own first error lines", () => {
    const f = classifyPipFailure(lines(NOT_FOUND), ctx("tdgreet\ndoesnotexist==1\n"));
    expect(f.kind).toBe("other");
    expect(f.culprit?.line).toBe(2);
    expect(f.excerpt).toEqual([
      "ERROR: Could not find a version that satisfies the requirement doesnotexist==1 (from versions: none)",
      "ERROR: No matching distribution found for doesnotexist==1",
    ]);
  });

  it("keeps the excerpt to pip's errors, without its advice and chatter", () => {
    expect(errorExcerpt(lines(DIRECT_NUMPY))).toEqual([
      "ERROR: Cannot install numpy>=2 because these package versions have conflicting dependencies.",
      "The conflict is caused by:",
      "    The user requested numpy>=2",
      "    The user requested (constraint) numpy==1.26.4",
      "ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution/#dealing-with-dependency-conflicts",
    ]);
  });
});
