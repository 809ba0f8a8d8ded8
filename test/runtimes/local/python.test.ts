import { describe, expect, it } from "vitest";
import { UserError } from "../../../src/errors.js";
import { discoverPython, findLibpython, type PythonProbe } from "../../../src/runtimes/local/python.js";

const probeOf = (version: string, extra: Partial<PythonProbe> = {}): PythonProbe => ({
  executable: `/usr/bin/python${version.slice(0, 4)}`,
  version,
  libDir: "/usr/lib",
  libPl: "/usr/lib/python/config",
  multiarch: "x86_64-linux-gnu",
  instSoName: `libpython${version.split(".").slice(0, 2).join(".")}.so.1.0`,
  enableShared: true,
  ...extra,
});

describe("discoverPython", () => {
  it("prefers the newest supported version on PATH", async () => {
    const probes: Record<string, PythonProbe> = {
      "python3.11": probeOf("3.11.7"),
      "python3.10": probeOf("3.10.2"),
      python3: probeOf("3.13.1"),
    };
    const p = await discoverPython({
      env: {},
      probe: async (c) => probes[c],
      exists: (f) => f.startsWith("/usr/lib/libpython"),
    });
    expect(p.version).toBe("3.11.7");
    expect(p.minor).toBe("3.11");
    expect(p.libName).toBe("libpython3.11.so.1.0");
  });

  it("finds the shared library in the multiarch folder when LIBDIR lacks it", async () => {
    const lib = findLibpython(
      probeOf("3.11.2", { libDir: "/opt/nowhere", instSoName: "" }),
      (f) => f === "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0",
    );
    expect(lib).toEqual({ libDir: "/usr/lib/x86_64-linux-gnu", libName: "libpython3.11.so.1.0" });
  });

  it("says which interpreters were rejected and why when none fits", async () => {
    const probes: Record<string, PythonProbe> = { python3: probeOf("3.13.0"), "python3.12": probeOf("3.12.1") };
    const err = await discoverPython({ env: {}, probe: async (c) => probes[c], exists: () => false }).catch((e) => e);
    expect(err).toBeInstanceOf(UserError);
    expect(err.message).toMatch(/python3\.12 \(Python 3\.12\.1\) has no shared libpython3\.12\.so/);
    expect(err.message).toMatch(/python3 is Python 3\.13\.0/);
    expect(err.hint).toMatch(/TRITON_DEV_PYTHON/);
  });

  it("reports no Python at all with an install hint", async () => {
    const err = await discoverPython({ env: {}, probe: async () => undefined }).catch((e) => e);
    expect(err).toBeInstanceOf(UserError);
    expect(err.message).toMatch(/no Python 3\.8-3\.12 found on PATH/);
    expect(err.hint).toMatch(/apt-get install/);
  });

  it("uses TRITON_DEV_PYTHON strictly when set", async () => {
    const err = await discoverPython({
      env: { TRITON_DEV_PYTHON: "/opt/py/bin/python" },
      probe: async () => probeOf("3.7.9"),
    }).catch((e) => e);
    expect(err.message).toMatch(/TRITON_DEV_PYTHON=\/opt\/py\/bin\/python/);
    expect(err.message).toMatch(/Python 3\.7\.9/);
  });

  it("probes this machine's real interpreter", async () => {
    const p = await discoverPython();
    expect(p.minor).toMatch(/^3\.(8|9|10|11|12)$/);
  });
});
