/**
 * A requirements.txt that would point pip elsewhere, against real pip and the built CLI: `up`'s
 * builder refuses it before pip runs (pip never reads the file outside the model, never asks the
 * index), lint reports it at the line, and a source the user's own pip configuration sets is
 * allowed and named.
 */
import fsp from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EnvironmentBuilder, EnvironmentError, type EnvironmentProgress } from "../../src/envs/builder.js";
import { ROOT, runCli, tempDir, testEnv } from "../helpers/cli.js";
import { buildWheel, managedPython, offlinePip } from "../helpers/wheels.js";
import { ECHO_MODEL_PY, pythonConfig } from "../repo/helpers.js";

const SECRET = "root:$6$never-printed-anywhere:19000:0:99999:7:::";

describe("requirements.txt that points pip elsewhere", () => {
  const { python, sitePackages } = managedPython();
  let work: string;
  let wheels: string;
  let root: string;
  let server: http.Server;
  let asked = 0;
  let index: string;
  const progress: EnvironmentProgress[] = [];
  const builder = (env: NodeJS.ProcessEnv) =>
    new EnvironmentBuilder({ root, base: { python, sitePackages }, env, onProgress: (p) => progress.push(p) });

  /** A python model folder in `work/repo` with this requirements.txt. */
  const model = async (name: string, requirements: string) => {
    const dir = path.join(work, "repo", name);
    await fsp.mkdir(path.join(dir, "1"), { recursive: true });
    await fsp.writeFile(path.join(dir, "config.pbtxt"), pythonConfig(name));
    await fsp.writeFile(path.join(dir, "1", "model.py"), ECHO_MODEL_PY);
    await fsp.writeFile(path.join(dir, "requirements.txt"), requirements);
    return { model: name, file: path.join(dir, "requirements.txt"), userFile: path.join(dir, "requirements.txt") };
  };

  beforeAll(async () => {
    work = await tempDir("req-refused");
    wheels = await tempDir("req-wheels");
    root = await tempDir("req-envs");
    await fsp.writeFile(path.join(work, "secret.txt"), `${SECRET}\n`);
    await buildWheel(python, wheels, {
      name: "tdgreet",
      version: "1.0",
      source: path.join(ROOT, "test/fixtures/requirements/packages/tdgreet"),
    });
    server = http.createServer((_req, res) => {
      asked++;
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    index = `http://127.0.0.1:${(server.address() as AddressInfo).port}/simple`;
  }, 120_000);

  afterAll(async () => {
    server?.close();
    for (const d of [work, wheels, root]) if (d) await fsp.rm(d, { recursive: true, force: true });
  });

  it("refuses -r of a file outside the model before pip reads it, and prints nothing of that file", async () => {
    const req = await model("shadow", "tdgreet==1.0\n-r ../../secret.txt\n");
    const err = await builder({ ...process.env, ...offlinePip(wheels) })
      .build(req)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EnvironmentError);
    const e = err as EnvironmentError;
    expect(e.refused).toBe(true);
    expect(e.diagnostics.map((d) => `${d.file}:${d.line}:${d.column} ${d.code}`)).toEqual([
      `${req.userFile}:2:1 requirements-outside-model`,
    ]);
    expect(JSON.stringify({ message: e.message, hint: e.hint, diagnostics: e.diagnostics })).not.toContain(
      "never-printed",
    );
    // pip never ran: no environment, no build log.
    expect(await fsp.readdir(root)).toEqual([]);
  });

  it("judges a link in the user's folder where it is still a link: its staged copy holds the outside file", async () => {
    const user = path.join(work, "user-repo", "linked");
    const staged = path.join(work, "staged", "linked");
    await fsp.mkdir(user, { recursive: true });
    await fsp.mkdir(staged, { recursive: true });
    await fsp.writeFile(path.join(user, "requirements.txt"), "tdgreet==1.0\n-r common.txt\n");
    await fsp.symlink(path.join(work, "secret.txt"), path.join(user, "common.txt"));
    // Staging copies the file a link points at: the snapshot pip would read holds the secret.
    await fsp.copyFile(path.join(user, "requirements.txt"), path.join(staged, "requirements.txt"));
    await fsp.copyFile(path.join(user, "common.txt"), path.join(staged, "common.txt"));
    const err = await builder({ ...process.env, ...offlinePip(wheels) })
      .build({
        model: "linked",
        file: path.join(staged, "requirements.txt"),
        userFile: path.join(user, "requirements.txt"),
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EnvironmentError);
    const e = err as EnvironmentError;
    expect(e.diagnostics.map((d) => `${d.file}:${d.line}:${d.column} ${d.code}`)).toEqual([
      `${path.join(user, "requirements.txt")}:2:1 requirements-outside-model`,
    ]);
    expect(JSON.stringify({ message: e.message, diagnostics: e.diagnostics })).not.toContain("never-printed");
  });

  it("refuses an index the user's pip configuration does not name: the index is never asked", async () => {
    const req = await model("index", `--extra-index-url ${index}\ntdgreet==1.0\n`);
    asked = 0;
    const err = await builder({ ...process.env, ...offlinePip(wheels), PIP_NO_INDEX: "" })
      .build(req)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EnvironmentError);
    expect((err as EnvironmentError).diagnostics.map((d) => `${d.line}:${d.column} ${d.code}`)).toEqual([
      "1:1 requirements-index",
    ]);
    expect(asked).toBe(0);
  });

  it("allows a find-links source the user's pip configuration sets, and names it", async () => {
    const req = await model("allowed", `--find-links ${wheels}\ntdgreet==1.0\n`);
    progress.length = 0;
    const built = await builder({ ...process.env, ...offlinePip(wheels) }).build(req);
    expect(built?.packages).toEqual(["tdgreet==1.0"]);
    expect(progress.map((p) => p.message)).toContain(
      `requirements.txt:1 installs from ${wheels} (--find-links, allowed: your pip configuration sets it in PIP_FIND_LINKS)`,
    );
  }, 120_000);

  it("lint reports each at its line, counts the model as not loading, and prints nothing of the outside file", async () => {
    const repo = path.join(work, "lint-repo");
    const dir = path.join(repo, "m");
    await fsp.mkdir(path.join(dir, "1"), { recursive: true });
    await fsp.writeFile(path.join(dir, "config.pbtxt"), pythonConfig("m"));
    await fsp.writeFile(path.join(dir, "1", "model.py"), ECHO_MODEL_PY);
    await fsp.writeFile(
      path.join(dir, "requirements.txt"),
      `tdgreet==1.0\n-r ${path.join(work, "secret.txt")}\n--index-url ${index}\n-e .\n--target /tmp/x\n`,
    );
    const res = await runCli(["lint", repo, "--json"], await testEnv({ PIP_CONFIG_FILE: "/dev/null" }));
    expect(res.code).not.toBe(0);
    const m = JSON.parse(res.stdout).models[0];
    expect(m.wouldLoad).toBe(false);
    const file = path.join(dir, "requirements.txt");
    expect(
      m.diagnostics.map(
        (d: { file: string; line: number; column: number; code: string }) =>
          `${path.relative(dir, d.file)}:${d.line}:${d.column} ${d.code}`,
      ),
    ).toEqual([
      "requirements.txt:2:1 requirements-outside-model",
      "requirements.txt:3:1 requirements-index",
      "requirements.txt:4:1 requirements-editable",
      "requirements.txt:5:1 requirements-install-location",
    ]);
    expect(res.stdout + res.stderr).not.toContain("never-printed");
    const human = await runCli(["lint", repo], await testEnv({ PIP_CONFIG_FILE: "/dev/null" }));
    expect(human.stdout + human.stderr).toContain(`${file}:2:1`);
    // The docker runtime runs the image's Python and installs nothing from the file: said, not refused.
    const docker = await runCli(
      ["lint", repo, "--json", "--runtime", "docker"],
      await testEnv({ PIP_CONFIG_FILE: "/dev/null" }),
    );
    const d = JSON.parse(docker.stdout).models[0];
    expect(d.wouldLoad).toBe(true);
    expect(
      d.diagnostics
        .filter((x: { code: string }) => x.code.startsWith("requirements-"))
        .map(
          (x: { severity: string; message: string }) =>
            `${x.severity} ${/docker runtime does not install/.test(x.message)}`,
        ),
    ).toEqual(Array(4).fill("warning true"));
  }, 60_000);
});
