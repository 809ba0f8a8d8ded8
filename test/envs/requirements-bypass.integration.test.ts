/**
 * The ways a requirements.txt once got past the checks to pip, against the real pip of the managed
 * environment and a package index of the test's own (`python -m http.server` on 127.0.0.1): pip's
 * own parser reads each file as the repository's author meant (another index, a file outside the
 * model, an editable install), and a real `pip install` of one of them asks that index; the
 * builder refuses every one at its file:line:col before pip runs (the index is never asked, no
 * environment, no log), and the built CLI's lint reports them without hanging on a FIFO or
 * /dev/zero and without printing anything of a file outside the model. What the grammar accepts,
 * pip's parser reads the same from the user's file as from the file the builder hands it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EnvironmentBuilder, EnvironmentError } from "../../src/envs/builder.js";
import { checkRequirementsFile, pipRequirementsText, type PipSources } from "../../src/envs/requirements-check.js";
import { ROOT, runCli, tempDir, testEnv } from "../helpers/cli.js";
import { buildWheel, managedPython } from "../helpers/wheels.js";
import { ECHO_MODEL_PY, pythonConfig } from "../repo/helpers.js";

const SECRET = "root:$6$never-printed-anywhere:19000:0:99999:7:::";

/** How pip's own requirements-file parser reads each file: the sources it would use, what it would install. */
const PIP_READS = String.raw`
import json, os, sys
from pip._vendor.packaging.requirements import Requirement
from pip._vendor.packaging.utils import canonicalize_name
from pip._internal.network.session import PipSession
from pip._internal.req.req_file import parse_requirements
from pip._internal.index.package_finder import PackageFinder
from pip._internal.index.collector import LinkCollector
from pip._internal.models.search_scope import SearchScope
from pip._internal.models.selection_prefs import SelectionPreferences
out = {}
for f in sys.argv[1:]:
    session = PipSession()
    scope = SearchScope.create(find_links=[], index_urls=[], no_index=False)
    finder = PackageFinder.create(link_collector=LinkCollector(session=session, search_scope=scope),
                                  selection_prefs=SelectionPreferences(allow_yanked=False))
    r = {"requirements": [], "editable": [], "error": "", "normalized": []}
    try:
        for p in parse_requirements(f, session, finder=finder):
            (r["editable"] if p.is_editable else r["requirements"]).append(p.requirement)
            hashes = sorted(h for hs in ((p.options or {}).get("hashes") or {}).items() for h in [hs[0] + ":" + v for v in hs[1]])
            q = Requirement(p.requirement)
            extras = ",".join(sorted(canonicalize_name(e) for e in q.extras))
            norm = canonicalize_name(q.name) + (f"[{extras}]" if extras else "") + str(q.specifier) + (f"; {q.marker}" if q.marker else "")
            r["normalized"].append([norm, hashes, p.constraint])
    except BaseException as e:
        r["error"] = str(e)
    r["sources"] = finder.index_urls + finder.find_links + list(finder.trusted_hosts)
    r["real_sources"] = sorted(x if "://" in x else os.path.realpath(x) for x in r["sources"])
    r["normalized"].sort()
    out[f] = r
print(json.dumps(out))
`;

interface PipReading {
  normalized: Array<[string, string[], boolean]>;
  real_sources: string[];
  requirements: string[];
  editable: string[];
  error: string;
  sources: string[];
}

describe("requirements.txt bypasses, against real pip and an index of the test's own", () => {
  const { python, sitePackages } = managedPython();
  let work: string;
  let index: ChildProcess;
  let indexLog = "";
  let port = 0;
  let secret: string;
  let root: string;

  /** Requests the test's index has served since `from` (its log, one line a request). */
  const requests = (from = 0) =>
    indexLog
      .slice(from)
      .split("\n")
      .filter((l) => /"GET /.test(l));

  beforeAll(async () => {
    work = await tempDir("req-bypass");
    root = await tempDir("req-bypass-envs");
    secret = path.join(work, "secret.txt");
    await fsp.writeFile(secret, `${SECRET}\n`);
    // A PEP 503 index with tdgreet, and the same folder as a find-links page (http.server's listing).
    const served = path.join(work, "index");
    await fsp.mkdir(path.join(served, "simple", "tdgreet"), { recursive: true });
    const wheel = await buildWheel(python, served, {
      name: "tdgreet",
      version: "1.0",
      source: path.join(ROOT, "test/fixtures/requirements/packages/tdgreet"),
    });
    await fsp.writeFile(
      path.join(served, "simple", "tdgreet", "index.html"),
      `<html><body><a href="../../${path.basename(wheel)}">${path.basename(wheel)}</a></body></html>\n`,
    );
    index = spawn(python, ["-u", "-m", "http.server", "--bind", "127.0.0.1", "--directory", served, "0"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    index.stderr!.on("data", (c: Buffer) => (indexLog += c.toString()));
    port = await new Promise<number>((resolve, reject) => {
      let out = "";
      const t = setTimeout(() => reject(new Error(`http.server did not start: ${out}`)), 20_000);
      index.stdout!.on("data", (c: Buffer) => {
        out += c.toString();
        const m = /port (\d+)/.exec(out);
        if (m) {
          clearTimeout(t);
          resolve(Number(m[1]));
        }
      });
    });
  }, 60_000);

  afterAll(async () => {
    if (index && index.exitCode === null) {
      const exited = new Promise((r) => index.once("exit", r));
      index.kill("SIGTERM");
      await exited;
    }
    for (const d of [work, root]) if (d) await fsp.rm(d, { recursive: true, force: true });
  });

  /** Each bypass: the file, where the builder refuses it, and what pip's parser makes of it. */
  const variants = () => {
    const simple = `http://127.0.0.1:${port}/simple`;
    const links = `http://127.0.0.1:${port}/`;
    const hidden = (brk: string) => `tdgreet==1.0\n# note${brk}--index-url ${simple}\n`;
    const utf16 = Buffer.concat([
      Buffer.from([0xff, 0xfe]),
      Buffer.from(`tdgreet==1.0\n--index-url ${simple}\n`, "utf16le"),
    ]);
    return [
      {
        name: "comment-backslash",
        text: `tdgreet==1.0\n# pinned \\\n--index-url ${simple}\n`,
        at: "2:10 requirements-syntax",
        pip: { source: simple },
      },
      { name: "cr", text: hidden("\r"), at: "2:7 requirements-syntax", pip: { source: simple } },
      { name: "vt", text: hidden("\v"), at: "2:7 requirements-syntax", pip: { source: simple } },
      { name: "ff", text: hidden("\f"), at: "2:7 requirements-syntax", pip: { source: simple } },
      { name: "fs", text: hidden("\x1c"), at: "2:7 requirements-syntax", pip: { source: simple } },
      { name: "nel", text: hidden("\x85"), at: "2:7 requirements-syntax", pip: { source: simple } },
      { name: "ls", text: hidden("\u2028"), at: "2:7 requirements-syntax", pip: { source: simple } },
      {
        name: "extra-index",
        text: `tdgreet==1.0\n--extra-index ${simple}\n`,
        at: "2:1 requirements-syntax",
        pip: { source: simple },
      },
      {
        name: "index-eq",
        text: `tdgreet==1.0\n--index=${simple}\n`,
        at: "2:1 requirements-syntax",
        pip: { source: simple },
      },
      { name: "find", text: `tdgreet==1.0\n--find ${links}\n`, at: "2:1 requirements-syntax", pip: { source: links } },
      {
        name: "trusted",
        text: "tdgreet==1.0\n--trusted 127.0.0.1\n",
        at: "2:1 requirements-syntax",
        pip: { source: "127.0.0.1" },
      },
      {
        name: "escaped",
        text: `tdgreet==1.0\n-\\-index-url=${simple}\n`,
        at: "2:2 requirements-syntax",
        pip: { source: simple },
      },
      {
        name: "requirem",
        text: `tdgreet==1.0\n--requirem ${secret}\n`,
        at: "2:1 requirements-syntax",
        pip: { leaks: true },
      },
      {
        name: "constr",
        text: `tdgreet==1.0\n--constr ${secret}\n`,
        at: "2:1 requirements-syntax",
        pip: { leaks: true },
      },
      { name: "edit", text: "tdgreet==1.0\n--edit /tmp\n", at: "2:1 requirements-syntax", pip: { editable: "/tmp" } },
      { name: "utf16", text: utf16, at: "1:1 requirements-encoding", pip: { source: simple } },
      {
        name: "utf7",
        text: `# -*- coding: utf-7 -*-\ntdgreet==1.0+AAo---index-url ${simple}\n`,
        at: "1:7 requirements-encoding",
        pip: { source: simple },
      },
      {
        name: "direct-reference",
        text: "tdgreet==1.0\npkg [x] @ file:///etc/passwd\n",
        at: "2:9 requirements-direct-reference",
        pip: { requirement: "file:///etc/passwd" },
      },
    ];
  };

  const modelFor = async (repo: string, name: string, text: string | Buffer) => {
    const dir = path.join(repo, name);
    await fsp.mkdir(path.join(dir, "1"), { recursive: true });
    await fsp.writeFile(path.join(dir, "config.pbtxt"), pythonConfig(name));
    await fsp.writeFile(path.join(dir, "1", "model.py"), ECHO_MODEL_PY);
    await fsp.writeFile(path.join(dir, "requirements.txt"), text);
    return path.join(dir, "requirements.txt");
  };

  it("pip obeys each: its own parser reads another source, a file outside the model, an editable install", async () => {
    const repo = path.join(work, "pip-reads");
    const files = new Map<string, ReturnType<typeof variants>[number]>();
    for (const v of variants()) files.set(await modelFor(repo, v.name, v.text), v);
    const r = await execa(python, ["-c", PIP_READS, ...files.keys()], {
      env: { ...process.env, PIP_CONFIG_FILE: "/dev/null" },
    });
    const read = JSON.parse(r.stdout) as Record<string, PipReading>;
    for (const [file, v] of files) {
      const got = read[file]!;
      const what = `${v.name}: ${JSON.stringify(got).replace(SECRET, "<secret>")}`;
      if ("source" in v.pip) expect(got.sources, what).toContain(v.pip.source);
      if ("leaks" in v.pip) expect(JSON.stringify(got), v.name).toContain(SECRET);
      if ("editable" in v.pip) expect(got.editable, what).toContain(v.pip.editable);
      if ("requirement" in v.pip) expect(got.requirements.join(" "), what).toContain(v.pip.requirement);
    }
  }, 60_000);

  it("what the grammar accepts, pip reads the same from the user's file as from the file pip is given", async () => {
    const h = (c: string) => `sha256:${c.repeat(64)}`;
    const corpus = [
      "tdgreet==1.0\n",
      "\ufeff# -*- coding: utf-8 -*-\r\nTdGreet [Extra_One , b] ( >= 1.0 , < 2 ) ; python_version >= '3.8' and (os_name == \"posix\" or extra == 'x')\r\n",
      `torch==2.3.1+cpu \\\n    --hash=${h("a")} \\\n    --hash ${h("b")}\n# Grüße … the end\n`,
      "--no-index\n--prefer-binary\n--only-binary :all:\n--find-links ./wheels\n-r more.txt\n-c pins.txt\nx.y_z~=1.4.2 # comment\n",
      "a===1.0-foo\nb!=1.*\nc>1;sys_platform in 'linux darwin'\n\n\t\n",
    ];
    const none: PipSources = { indexes: new Set(), findLinks: new Set(), trustedHosts: new Set(), origin: new Map() };
    const pairs: Array<[string, string]> = [];
    for (const [i, text] of corpus.entries()) {
      const file = await modelFor(path.join(work, "agree"), `m${i}`, text);
      const dir = path.dirname(file);
      await fsp.mkdir(path.join(dir, "wheels"), { recursive: true });
      await fsp.writeFile(path.join(dir, "more.txt"), "tdhello[x]>=2 \\\n  ; python_version < '4'\n");
      await fsp.writeFile(path.join(dir, "pins.txt"), "tdhello<3\n");
      const r = checkRequirementsFile(file, dir, { pip: none, env: {} });
      expect(r.diagnostics, text).toEqual([]);
      const given = path.join(work, "agree", `m${i}.given.txt`);
      await fsp.writeFile(given, pipRequirementsText(r.resolved!));
      // pip reads constraints from their own file; the builder puts them in the constraints it passes.
      const constraints = path.join(work, "agree", `m${i}.constraints.txt`);
      await fsp.writeFile(constraints, r.resolved!.constraints.map((c) => `${c.text}\n`).join(""));
      pairs.push([file, given]);
      if (r.resolved!.constraints.length) pairs.push([constraints, constraints]);
    }
    const r = await execa(python, ["-c", PIP_READS, ...pairs.flat()], {
      env: { ...process.env, PIP_CONFIG_FILE: "/dev/null" },
    });
    const read = JSON.parse(r.stdout) as Record<string, PipReading>;
    for (const [user, given] of pairs.filter(([a, b]) => a !== b)) {
      const u = read[user]!;
      const g = read[given]!;
      expect(u.error, user).toBe("");
      // The user's file includes pins.txt as constraints; the given file leaves them to -c.
      expect(g.normalized, user).toEqual(u.normalized.filter(([, , constraint]) => !constraint));
      expect(g.real_sources, user).toEqual(u.real_sources);
    }
    const withConstraints = pairs.find(([a, b]) => a === b)![0];
    const userReading = read[pairs.find(([a]) => a.endsWith("m3/requirements.txt"))![0]]!;
    expect(read[withConstraints]!.normalized.map(([req]) => req)).toEqual(
      userReading.normalized.filter(([, , c]) => c).map(([req]) => req),
    );
  }, 60_000);

  it("a real pip install of the hidden --index-url asks the file's index", async () => {
    const file = await modelFor(path.join(work, "pip-installs"), "m", variants()[0]!.text);
    const from = indexLog.length;
    const r = await execa(
      python,
      ["-m", "pip", "install", "--dry-run", "--no-deps", "--disable-pip-version-check", "-r", file],
      { env: { ...process.env, PIP_CONFIG_FILE: "/dev/null", PIP_NO_INPUT: "1" }, reject: false, all: true },
    );
    expect(
      requests(from).some((l) => l.includes("GET /simple/tdgreet/")),
      String(r.all),
    ).toBe(true);
    expect(r.all).toMatch(/Would install tdgreet-1\.0/);
  }, 120_000);

  it("the builder refuses each at its file:line:col before pip runs: the index is never asked, nothing is built or logged", async () => {
    const repo = path.join(work, "builder");
    const from = indexLog.length;
    const builder = new EnvironmentBuilder({
      root,
      base: { python, sitePackages },
      env: { ...process.env, PIP_CONFIG_FILE: "/dev/null", PIP_NO_INDEX: "1" },
    });
    const refused: string[] = [];
    for (const v of variants()) {
      const file = await modelFor(repo, v.name, v.text);
      const err = await builder.build({ model: v.name, file, userFile: file }).catch((e: unknown) => e);
      expect(err, v.name).toBeInstanceOf(EnvironmentError);
      const e = err as EnvironmentError;
      expect(e.refused, v.name).toBe(true);
      expect(e.message, v.name).toContain(`${file}:${v.at.split(" ")[0]}`);
      expect(JSON.stringify({ m: e.message, h: e.hint, d: e.diagnostics }), v.name).not.toContain("never-printed");
      const d = e.diagnostics[0]!;
      refused.push(`${v.name} ${d.line}:${d.column} ${d.code}`);
    }
    expect(refused).toEqual(variants().map((v) => `${v.name} ${v.at}`));
    expect(requests(from)).toEqual([]);
    expect(await fsp.readdir(root)).toEqual([]);
  }, 120_000);

  it("lint reports each at its line, and a FIFO or a link to /dev/zero neither hangs it nor exhausts memory", async () => {
    const repo = path.join(work, "lint-repo");
    for (const v of variants()) await modelFor(repo, v.name.replace(/-/g, "_"), v.text);
    const fifo = await modelFor(repo, "fifo", "");
    await fsp.rm(fifo);
    await execa("mkfifo", [fifo]);
    const zero = await modelFor(repo, "zero", "");
    await fsp.rm(zero);
    await fsp.symlink("/dev/zero", zero);
    const env = await testEnv({ PIP_CONFIG_FILE: "/dev/null" });
    const t0 = Date.now();
    const res = await runCli(["lint", repo, "--json"], env, 60_000);
    const ms = Date.now() - t0;
    expect(res.code).not.toBe(0);
    const models = JSON.parse(res.stdout).models as Array<{
      name: string;
      wouldLoad: boolean;
      diagnostics: Array<{ file: string; line: number; column: number; code: string }>;
    }>;
    const requirementsFindings = (name: string) =>
      models
        .find((m) => m.name === name)!
        .diagnostics.filter((d) => d.code.startsWith("requirements-"))
        .map((d) => `${path.relative(repo, d.file)}:${d.line}:${d.column} ${d.code}`);
    for (const v of variants()) {
      const name = v.name.replace(/-/g, "_");
      // The bypass first; the line it hid may be reported after it (an index the user's pip does not use).
      expect(requirementsFindings(name)[0], v.name).toBe(`${name}/requirements.txt:${v.at}`);
      expect(models.find((m) => m.name === name)!.wouldLoad).toBe(false);
    }
    expect(requirementsFindings("fifo")).toEqual(["fifo/requirements.txt:1:1 requirements-unreadable"]);
    expect(requirementsFindings("zero")).toEqual(["zero/requirements.txt:1:1 requirements-outside-model"]);
    expect(res.stdout + res.stderr).not.toContain("never-printed");
    // Bounded by the CLI's own start and the models' checks, not by a read that never ends.
    expect(ms).toBeLessThan(60_000);
    // The human form names the place as file:line:col.
    const human = await runCli(["lint", repo], env, 60_000);
    expect(human.stdout + human.stderr).toContain(`${path.join(repo, "comment_backslash", "requirements.txt")}:2:10`);
    expect(fs.existsSync(fifo)).toBe(true);
  }, 180_000);
});
