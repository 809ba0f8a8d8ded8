import { describe, expect, it } from "vitest";
import { unsafeStubPath } from "../../../src/runtimes/local/driver.js";

describe("unsafeStubPath", () => {
  it("passes the paths the python backend's bash command line takes literally", () => {
    expect(
      unsafeStubPath({ state: "/home/me/.cache/triton-dev/state/runs", home: "/opt/td-1.0+x/backends/py3.11" }),
    ).toBeUndefined();
  });

  // Measured on tritonserver 2.51: a repository path with a space made every python model's load
  // hang (the stub got its arguments split), one with $(...) ran it, a non-ASCII one failed.
  it.each(["/home/John Smith/.cache", "/tmp/$(touch PWNED)", "/home/josé/.cache", "/tmp/a;b"])(
    "names %j and which setting it is",
    (p) => {
      expect(unsafeStubPath({ fine: "/tmp/ok", "state folder": p })).toEqual({ what: "state folder", path: p });
    },
  );
});
