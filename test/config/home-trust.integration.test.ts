// TRITON_DEV_HOME is where triton-dev runs things from (the managed Python, tritonserver, the
// stub, the preloaded key library). Another local user (uid 65534) who made the folder first, under
// /tmp, or who can change a folder on the way to it, must get nothing of theirs run by us.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { requireTrustedHome } from "../../src/config/home-trust.js";
import { UntrustedFolderError } from "../../src/config/folder-trust.js";
import { freePorts, portArgs, runCli, tempDir, testEnv } from "../helpers/cli.js";

const asRoot = process.getuid?.() === 0;
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});
function temp(prefix: string): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(d);
  return d;
}

/**
 * A home as uid 65534 would plant it: a marker naming its own "Python" and "tritonserver", which
 * leave `proof` behind when anything runs them.
 */
function plantedHome(proof: string): string {
  const home = temp("planted-home-");
  const script = `#!/bin/sh\necho "$(id -u) $0" >> ${proof}\nexit 1\n`;
  const files = {
    venvPython: path.join(home, "venv", "bin", "python"),
    serverBin: path.join(home, "venv", "bin", "tritonserver"),
    stub: path.join(home, "backends", "py3.11", "python", "triton_python_backend_stub"),
    lib: path.join(home, "backends", "py3.11", "python", "libtriton_python.so"),
  };
  for (const f of Object.values(files)) {
    fs.mkdirSync(path.dirname(f), { recursive: true });
    fs.writeFileSync(f, script, { mode: 0o755 });
  }
  const marker = {
    python: {
      executable: files.venvPython,
      version: "3.11.7",
      minor: "3.11",
      libDir: home,
      libName: "libpython3.11.so",
    },
    venv: path.join(home, "venv"),
    venvPython: files.venvPython,
    sitePackages: path.join(home, "venv"),
    serverBin: files.serverBin,
    libDirs: [],
    backendDir: path.join(home, "backends", "py3.11"),
    pytritonVersion: "0.7.0",
  };
  fs.writeFileSync(path.join(home, "environment.json"), JSON.stringify(marker));
  // Made by the other user: every file and folder theirs, the folder itself 0755 under sticky /tmp.
  for (const p of [home, ...fs.readdirSync(home, { recursive: true }).map((e) => path.join(home, String(e)))])
    fs.lchownSync(p, 65534, 65534);
  return home;
}

describe("a home another user can change", () => {
  it.skipIf(!asRoot)(
    "up refuses a home uid 65534 made under /tmp, naming the folder and its owner, and runs nothing of it",
    async () => {
      const proof = path.join(temp("planted-proof-"), "ran");
      const home = plantedHome(proof);
      const env = await testEnv({ TRITON_DEV_HOME: home });
      const repo = await tempDir("home-trust-models");
      fs.mkdirSync(path.join(repo, "m", "1"), { recursive: true });
      fs.writeFileSync(path.join(repo, "m", "config.pbtxt"), 'name: "m"\nbackend: "python"\n');
      fs.writeFileSync(path.join(repo, "m", "1", "model.py"), "class TritonPythonModel:\n    pass\n");
      const r = await runCli(
        ["up", "--runtime", "local", "--models", repo, ...portArgs(await freePorts())],
        env,
        120_000,
      );
      expect(fs.existsSync(proof) ? fs.readFileSync(proof, "utf8") : "").toBe("");
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`triton-dev will not use its home ${home} (TRITON_DEV_HOME): ${home} is owned by`);
      expect(r.stderr).toContain("(uid 65534), another user");
      expect(r.stderr).toContain("Point TRITON_DEV_HOME at a folder of your own");
    },
    180_000,
  );

  it.skipIf(!asRoot)("refuses a link to a home of ours when another user owns the link", () => {
    const ours = temp("home-ours-");
    const where = temp("home-link-");
    const link = path.join(where, "home");
    fs.symlinkSync(ours, link);
    fs.lchownSync(link, 65534, 65534);
    expect(() => requireTrustedHome(link)).toThrow(UntrustedFolderError);
    expect(() => requireTrustedHome(ours)).not.toThrow();
  });

  it("refuses a home below a folder its group or every user can write, and one whose venv another can write", () => {
    const open = temp("home-open-");
    fs.chmodSync(open, 0o775);
    fs.mkdirSync(path.join(open, "home"));
    expect(() => requireTrustedHome(path.join(open, "home"))).toThrow(
      expect.objectContaining({ message: expect.stringContaining(`${open} can be written by its group (mode 0775`) }),
    );
    const home = temp("home-venv-");
    fs.mkdirSync(path.join(home, "venv", "bin"), { recursive: true });
    fs.chmodSync(path.join(home, "venv", "bin"), 0o777);
    expect(() => requireTrustedHome(home)).toThrow(
      expect.objectContaining({
        message: expect.stringContaining(`${path.join(home, "venv", "bin")} can be written by every user`),
      }),
    );
    // Not made yet: judged by where it would be made (/tmp: sticky, root's).
    expect(() => requireTrustedHome(path.join(os.tmpdir(), "triton-dev-not-made-yet", "home"))).not.toThrow();
  });
});
