import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EnvironmentBuilder, EnvironmentError, type EnvironmentProgress } from "../../src/envs/builder.js";
import { environmentKey } from "../../src/envs/requirements.js";
import { ROOT, tempDir } from "../helpers/cli.js";
import { buildWheel, managedPython, moduleWheel, offlinePip } from "../helpers/wheels.js";

const GREET_SOURCE = path.join(ROOT, "test/fixtures/requirements/packages/tdgreet");

/**
 * Real pip (the managed environment's), real venvs, wheels built here into a folder pip reads
 * through PIP_FIND_LINKS with no index: nothing depends on a registry.
 */
describe("EnvironmentBuilder (real pip, local wheels)", () => {
  const { python, sitePackages } = managedPython();
  let wheels: string;
  let root: string;
  let env: NodeJS.ProcessEnv;
  let work: string;
  const progress: EnvironmentProgress[] = [];
  const builder = (o: { progressEveryMs?: number } = {}) =>
    new EnvironmentBuilder({ root, base: { python, sitePackages }, env, onProgress: (p) => progress.push(p), ...o });
  /** A requirements.txt in a model folder of its own. */
  const requirements = async (model: string, text: string) => {
    const dir = path.join(work, model);
    await fsp.mkdir(dir, { recursive: true });
    await fsp.writeFile(path.join(dir, "requirements.txt"), text);
    return { model, file: path.join(dir, "requirements.txt"), userFile: `/home/u/models/${model}/requirements.txt` };
  };

  beforeAll(async () => {
    wheels = await tempDir("wheels");
    root = await tempDir("envs");
    work = await tempDir("reqs");
    await buildWheel(python, wheels, { name: "tdgreet", version: "1.0", source: GREET_SOURCE });
    await moduleWheel(python, wheels, { name: "tdneedsnumpy2", version: "1.0", code: "", requires: ["numpy>=2"] });
    await moduleWheel(python, wheels, { name: "tdfuture", version: "1.0", code: "", requiresPython: ">=3.13" });
    await moduleWheel(python, wheels, { name: "tdbroken", version: "1.0", code: "", requires: ["tdmissing>=1"] });
    env = { ...process.env, ...offlinePip(wheels) };
  }, 60_000);

  afterAll(async () => {
    for (const d of [wheels, root, work]) if (d) await fsp.rm(d, { recursive: true, force: true });
  });

  it("builds an environment the stub's Python runs with the package, keeping the managed numpy", async () => {
    const t0 = Date.now();
    const built = (await builder().build(await requirements("a", "tdgreet==1.0\n")))!;
    const coldMs = Date.now() - t0;
    expect(built.cached).toBe(false);
    expect(built.packages).toEqual(["tdgreet==1.0"]);
    expect(built.dir).toBe(path.join(root, built.key));
    // What the stub's `source bin/activate && exec ...` relies on.
    expect(fs.existsSync(path.join(built.dir, "bin", "activate"))).toBe(true);
    const probe = await execa(path.join(built.dir, "bin", "python"), [
      "-c",
      "import json, sys, numpy, tdgreet; print(json.dumps([sys.prefix, numpy.__version__, numpy.__file__, tdgreet.greet('x')]))",
    ]);
    const [prefix, numpyVersion, numpyFile, greeting] = JSON.parse(probe.stdout) as string[];
    expect(prefix).toBe(built.dir);
    expect(numpyVersion).toMatch(/^1\./);
    expect(numpyFile!.startsWith(sitePackages)).toBe(true);
    expect(greeting).toBe("hello x (tdgreet 1.0)");
    // Only the new package went into the environment: numpy stays the managed one.
    const own = await fsp.readdir(
      path.join(built.dir, "lib", path.basename(path.dirname(sitePackages)), "site-packages"),
    );
    expect(own.filter((f) => f.startsWith("numpy"))).toEqual([]);
    expect(progress.some((p) => p.line?.startsWith("Successfully installed tdgreet-1.0"))).toBe(true);

    // Another run (a new builder) with the same set, written differently: the same folder, nothing run.
    const t1 = Date.now();
    const again = (await builder().build(await requirements("b", "# greeting\n\ntdgreet==1.0   # pinned\n")))!;
    const cachedMs = Date.now() - t1;
    expect(again).toMatchObject({ cached: true, dir: built.dir, key: built.key, packages: ["tdgreet==1.0"] });
    console.info(`environment build: cold ${(coldMs / 1000).toFixed(2)} s, cached ${cachedMs} ms`);
    expect(cachedMs).toBeLessThan(coldMs);
  }, 120_000);

  it("says while it builds which model's environment, for what, and its time so far, until it is ready", async () => {
    const from = progress.length;
    // A set no other test builds; a beat every 50 ms, which pip's own start outlasts.
    const built = (await builder({ progressEveryMs: 50 }).build(await requirements("beat", "tdgreet<1.5\n")))!;
    expect(built.cached).toBe(false);
    const said = progress.slice(from).filter((p) => p.model === "beat" && p.line === undefined);
    const beats = said.filter((p) => /^still building its environment \(tdgreet<1\.5\): \d+ s so far$/.test(p.message));
    expect(beats.length).toBeGreaterThanOrEqual(1);
    const at = (re: RegExp) => said.findIndex((p) => re.test(p.message));
    expect(at(/^resolving tdgreet<1\.5/)).toBeLessThan(at(/^still building/));
    expect(at(/^environment [0-9a-f]{20} ready in/)).toBe(said.length - 1);
  }, 120_000);

  it("builds one environment for two models asking for the same set at once", async () => {
    const b = builder();
    // A set not built by the tests before this one.
    const [x, y] = await Promise.all([
      b.build(await requirements("c", "tdgreet>=1.0\n")),
      b.build(await requirements("d", "tdgreet >= 1.0")),
    ]);
    expect(x!.dir).toBe(y!.dir);
    expect([x!.cached, y!.cached]).toEqual([false, false]);
    expect(progress.filter((p) => p.key === x!.key && p.line?.startsWith("Successfully installed"))).toHaveLength(1);
    expect(fs.readdirSync(root).filter((f) => f.endsWith(".lock"))).toEqual([]);
  }, 60_000);

  it("has nothing to build for a requirements.txt of comments", async () => {
    expect(await builder().build(await requirements("e", "# nothing yet\n"))).toBeUndefined();
  });

  it("refuses numpy 2 before anything is built, at its line, saying what the stub needs", async () => {
    const before = fs.readdirSync(root).filter((f) => !f.includes("."));
    const err = await builder()
      .build(await requirements("f", "tdgreet==1.0\nnumpy>=2\n"))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EnvironmentError);
    const e = err as EnvironmentError;
    expect(e.refused).toBe(true);
    expect(e.diagnostics[0]).toMatchObject({ line: 2, column: 1, code: "requirements-conflict", model: "f" });
    expect(e.diagnostics[0]!.file).toBe("/home/u/models/f/requirements.txt");
    expect(e.message).toMatch(/numpy>=2.*numpy 1\.\d+\.\d+/);
    expect(e.hint).toMatch(/numpy<2/);
    // No environment folder was created for it.
    expect(fs.readdirSync(root).filter((f) => !f.includes("."))).toEqual(before);
  }, 60_000);

  it("refuses a dependency that needs numpy 2, naming the package that brings it", async () => {
    const e = (await builder()
      .build(await requirements("g", "tdneedsnumpy2\n"))
      .catch((x: unknown) => x)) as EnvironmentError;
    expect(e).toBeInstanceOf(EnvironmentError);
    expect(e.refused).toBe(true);
    expect(e.diagnostics[0]!.message).toMatch(/^tdneedsnumpy2 1\.0 needs numpy>=2/);
  }, 60_000);

  it("refuses a package that needs another Python than the stub's", async () => {
    const e = (await builder()
      .build(await requirements("h", "tdgreet\ntdfuture\n"))
      .catch((x: unknown) => x)) as EnvironmentError;
    expect(e).toBeInstanceOf(EnvironmentError);
    expect(e.refused).toBe(true);
    expect(e.diagnostics[0]).toMatchObject({ line: 2, code: "requirements-conflict" });
    expect(e.diagnostics[0]!.message).toMatch(/tdfuture needs another Python than the stub's 3\.\d+\.\d+.*>=3\.13/);
  }, 60_000);

  it("fails with pip's own error when a package cannot be found, and leaves no environment behind", async () => {
    // A log an earlier version left world-readable beside the environments.
    const oldLog = path.join(root, "0123456789abcdef0123.log");
    await fsp.writeFile(oldLog, "what pip once echoed\n", { mode: 0o644 });
    const e = (await builder()
      .build(await requirements("i", "tdbroken==1.0\n"))
      .catch((x: unknown) => x)) as EnvironmentError;
    expect(e).toBeInstanceOf(EnvironmentError);
    expect(e.refused).toBe(false);
    expect(e.diagnostics[0]!.code).toBe("requirements-install-failed");
    expect(e.diagnostics[0]!.message).toMatch(/Could not find a version that satisfies the requirement tdmissing>=1/);
    expect(e.hint).toMatch(/pip's full output is in .*\.log/);
    // pip's output is the user's alone: 0600 in a 0700 folder, even where an older build left a 0644 one.
    const log = /pip's full output is in (\S+\.log)/.exec(e.hint!)![1]!;
    expect(path.dirname(log)).toBe(path.join(root, "logs"));
    expect(fs.existsSync(oldLog)).toBe(false);
    expect(fs.statSync(log).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.dirname(log)).mode & 0o777).toBe(0o700);
    fs.chmodSync(log, 0o644);
    fs.chmodSync(path.dirname(log), 0o755);
    await builder()
      .build(await requirements("i2", "tdbroken==1.0\n"))
      .catch(() => undefined);
    expect(fs.statSync(log).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.dirname(log)).mode & 0o777).toBe(0o700);
  }, 60_000);

  it("takes over the lock of a builder that died", async () => {
    const req = await requirements("j", "tdgreet<2\n");
    const b = builder();
    const key = environmentKey(["tdgreet<2"], await b.base());
    // A pid that is not running.
    await fsp.writeFile(path.join(root, `${key}.lock`), "999999");
    const built = (await b.build(req))!;
    expect(built.key).toBe(key);
    expect(built.cached).toBe(false);
    expect(fs.existsSync(path.join(root, `${key}.lock`))).toBe(false);
  }, 60_000);
});
