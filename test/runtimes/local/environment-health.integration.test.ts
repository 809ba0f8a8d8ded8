import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePorts, portArgs, ROOT, runCli, tempDir, testEnv } from "../../helpers/cli.js";
import { managedPython, moduleWheel, offlinePip, repackInstalled } from "../../helpers/wheels.js";

interface DoctorCheck {
  name: string;
  ok: boolean;
  detail: string;
  hint?: string;
}

/**
 * What the user did (`venv/bin/pip install` of a package that brought numpy 2) done to a
 * copy of the managed home, never to the one every test shares: doctor must see it, `up` must
 * refuse it, and `setup --repair` must put the pinned numpy and the stub back without a rebuild.
 * pip reads only a wheel folder made here: a numpy "2.0.0" wheel that breaks the environment the
 * way a real one would for the version check, and the managed environment's own numpy 1.x packed
 * back into its wheel, which the repair reinstalls.
 */
describe("doctor and setup --repair on a managed environment that no longer matches the stub", () => {
  const source = managedPython();
  let home: string;
  let wheels: string;
  let env: NodeJS.ProcessEnv;
  let pinnedNumpy: string;
  const venvPython = () => path.join(home, "venv", "bin", "python");
  const environmentCheck = async (): Promise<{ code: number; check: DoctorCheck }> => {
    // Free ports, so that only the environment can fail doctor.
    const r = await runCli(["doctor", "--json", ...portArgs(await freePorts())], env);
    const checks = JSON.parse(r.stdout).checks as DoctorCheck[];
    return { code: r.code, check: checks.find((c) => c.name === "environment")! };
  };
  const numpyVersion = async () =>
    (await execa(venvPython(), ["-c", "import numpy; print(numpy.__version__)"])).stdout.trim();

  beforeAll(async () => {
    home = await tempDir("home-copy");
    for (const entry of ["venv", "backends", "environment.json"])
      await execa("cp", ["-a", path.join(source.home, entry), path.join(home, entry)]);
    // The record names the files it found by absolute path: the copy's own.
    const marker = path.join(home, "environment.json");
    await fsp.writeFile(marker, (await fsp.readFile(marker, "utf8")).split(source.home).join(home));
    wheels = await tempDir("repair-wheels");
    await moduleWheel(source.python, wheels, { name: "numpy", version: "2.0.0", code: '__version__ = "2.0.0"\n' });
    const repacked = await repackInstalled(source.python, "numpy", wheels);
    pinnedNumpy = /numpy-([^-]+)-/.exec(path.basename(repacked))![1]!;
    env = await testEnv({ TRITON_DEV_HOME: home, ...offlinePip(wheels) });
  }, 120_000);

  afterAll(async () => {
    for (const d of [home, wheels]) if (d) await fsp.rm(d, { recursive: true, force: true });
  });

  it("finds the copy healthy before anything is done to it", async () => {
    const { check } = await environmentCheck();
    expect(check.ok).toBe(true);
    expect(check.detail).toContain(`numpy ${pinnedNumpy}`);
  }, 60_000);

  it("detects numpy 2 installed into the managed environment, and up refuses to serve with it", async () => {
    await execa(venvPython(), ["-m", "pip", "install", "--no-deps", "--disable-pip-version-check", "numpy==2.0.0"], {
      env: { ...process.env, ...offlinePip(wheels) },
    });
    expect(await numpyVersion()).toBe("2.0.0");
    const { code, check } = await environmentCheck();
    expect(code).toBe(1);
    expect(check.ok).toBe(false);
    expect(check.detail).toMatch(/numpy 2\.0\.0 is installed in the managed environment.*numpy 1\.x/);
    expect(check.hint).toMatch(/triton-dev setup --repair/);

    const models = await tempDir("repair-models");
    await fsp.cp(path.join(ROOT, "test/fixtures/requirements/models/add_sub"), path.join(models, "add_sub"), {
      recursive: true,
    });
    const up = await runCli(
      ["up", "--detach", "--runtime", "local", "--models", models, ...portArgs(await freePorts())],
      env,
    );
    expect(up.code).toBe(1);
    expect(up.stderr).toMatch(/the managed environment no longer matches the python backend stub: numpy 2\.0\.0/);
    expect(up.stderr).toMatch(/setup --repair/);
  }, 120_000);

  it("setup --repair reinstalls the pinned numpy in place, without rebuilding the venv", async () => {
    const venvBefore = fs.statSync(path.join(home, "venv", "pyvenv.cfg")).mtimeMs;
    const t0 = Date.now();
    const r = await runCli(["setup", "--repair"], env);
    const ms = Date.now() - t0;
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/installing nvidia-pytriton==\S+ numpy>=1\.22,<2/);
    expect(await numpyVersion()).toBe(pinnedNumpy);
    expect(fs.statSync(path.join(home, "venv", "pyvenv.cfg")).mtimeMs).toBe(venvBefore);
    const { code, check } = await environmentCheck();
    expect(check.ok).toBe(true);
    expect(code).toBe(0);
    console.info(`setup --repair of numpy 2.0.0 -> ${pinnedNumpy}: ${(ms / 1000).toFixed(1)} s`);
  }, 180_000);

  it("detects a missing stub, which a plain setup puts back", async () => {
    const marker = JSON.parse(await fsp.readFile(path.join(home, "environment.json"), "utf8")) as {
      backendDir: string;
    };
    const realStub = path.join(marker.backendDir, "python", "triton_python_backend_stub");
    await fsp.rm(realStub);
    const { check } = await environmentCheck();
    expect(check.ok).toBe(false);
    expect(check.detail).toContain(`the python backend stub ${realStub} is missing`);
    const r = await runCli(["setup"], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/repairing: the python backend stub .* is missing/);
    expect(fs.existsSync(realStub)).toBe(true);
    expect((await environmentCheck()).check.ok).toBe(true);
  }, 180_000);
});
