import fsp from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, runCli, tempDir, testEnv } from "../helpers/cli.js";
import { LspClient } from "../lsp/client.js";
import { ECHO_IO, ECHO_MODEL_PY, pythonConfig } from "./helpers.js";

// A repository of 2,000 models read under the open-file limit macOS and many desktops start with
// (256): lint and the editor find what they find without a limit, not a false "missing" or
// "unreadable" for every file that could not be opened at that moment.

const MODELS = 2000;
const LIMIT = 256;
/** Models with a real finding each, so that "the same findings" is more than "none". */
const BROKEN = ["m0007", "m0999", "m1500"];

/** The CLI under `ulimit -n LIMIT` (bash's builtin: the limit the user's shell would give it). */
const limited = (args: string[]): [string, string[]] => [
  "bash",
  ["-c", `ulimit -n ${LIMIT} && exec "$0" "$@"`, process.execPath, CLI, ...args],
];

interface LintJson {
  errorCount: number;
  warningCount: number;
  models: Array<{ name: string; diagnostics: Array<{ code: string; file: string; line: number; column: number }> }>;
}

describe(`lint and the language server under ulimit -n ${LIMIT} with ${MODELS} models`, () => {
  let repo: string;
  let env: NodeJS.ProcessEnv;
  let unlimited: LintJson;

  beforeAll(async () => {
    repo = await tempDir("fd-limit");
    env = await testEnv();
    for (let i = 0; i < MODELS; i++) {
      const name = `m${String(i).padStart(4, "0")}`;
      await fsp.mkdir(path.join(repo, name, "1"), { recursive: true });
      const body = BROKEN.includes(name) ? ECHO_IO.replace("TYPE_FP32", "TYPE_FP23") : ECHO_IO;
      await fsp.writeFile(path.join(repo, name, "config.pbtxt"), pythonConfig(name, body));
      await fsp.writeFile(path.join(repo, name, "1", "model.py"), ECHO_MODEL_PY);
    }
    const r = await runCli(["lint", "--json", repo], env);
    unlimited = JSON.parse(r.stdout) as LintJson;
    expect(unlimited.errorCount).toBe(BROKEN.length);
  }, 240_000);
  afterAll(async () => {
    await fsp.rm(repo, { recursive: true, force: true });
  });

  it("`lint` reports the same findings as without a limit", async () => {
    const [cmd, args] = limited(["lint", "--json", repo]);
    const { execFile } = await import("node:child_process");
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(cmd, args, { env, maxBuffer: 64 * 1024 * 1024, timeout: 180_000 }, (err, out) =>
        // lint exits 1 for the findings it reports; only its output is compared.
        err && typeof err.code !== "number" ? reject(err) : resolve(String(out)),
      ),
    );
    const got = JSON.parse(stdout) as LintJson;
    expect(got.models.filter((m) => m.diagnostics.length).map((m) => m.name)).toEqual(BROKEN);
    expect(got).toEqual(unlimited);
  }, 240_000);

  it("the language server publishes the same findings as `lint`, and none on the other configs", async () => {
    const [cmd, args] = limited(["lsp", "--stdio"]);
    const client = LspClient.spawn(cmd, args, env);
    try {
      await client.initialize(repo);
      const open = path.join(repo, "m0001", "config.pbtxt");
      await client.open(open, await fsp.readFile(open, "utf8"));
      await client.waitForDiagnostics(open, () => true, 180_000);
      // The repository's findings are published once it is read whole; a config opened after
      // them is answered after them.
      for (const m of BROKEN)
        await client.waitForDiagnostics(path.join(repo, m, "config.pbtxt"), (d) => d.length > 0, 180_000);
      const last = path.join(repo, "m1999", "config.pbtxt");
      await client.open(last, await fsp.readFile(last, "utf8"));
      await client.waitForDiagnostics(last, () => true, 60_000);
      const withFindings = [...client.diagnostics].filter(([, ds]) => ds.length > 0).map(([uri]) => uri);
      expect(withFindings.sort()).toEqual(BROKEN.map((m) => pathToFileURL(path.join(repo, m, "config.pbtxt")).href));
      for (const m of BROKEN)
        expect(
          client.diagnostics.get(pathToFileURL(path.join(repo, m, "config.pbtxt")).href)!.map((d) => d.code),
        ).toEqual(unlimited.models.find((x) => x.name === m)!.diagnostics.map((d) => d.code));
    } finally {
      expect(await client.stop()).toBe(0);
    }
  }, 240_000);
});
