import { execFileSync } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  checkRequirementsFile,
  MAX_REQUIREMENTS_BYTES,
  pipRequirementsText,
  userPipSources,
  type PipSources,
} from "../../src/envs/requirements-check.js";

let base: string;
let model: string;
const SECRET = "root:$6$not-for-anyone:19000:0:99999:7:::";

beforeAll(async () => {
  base = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-reqcheck-"));
  model = path.join(base, "repo", "m");
  await fsp.mkdir(path.join(model, "wheels"), { recursive: true });
  await fsp.writeFile(path.join(base, "secret.txt"), `${SECRET}\n`);
  await fsp.writeFile(path.join(model, "wheels", "tdlocal-1.0-py3-none-any.whl"), "");
  await fsp.symlink(path.join(base, "secret.txt"), path.join(model, "linked.txt"));
});
afterAll(async () => {
  await fsp.rm(base, { recursive: true, force: true });
});

const NONE: PipSources = { indexes: new Set(), findLinks: new Set(), trustedHosts: new Set(), origin: new Map() };

function check(text: string, pip: PipSources = NONE, env: NodeJS.ProcessEnv = {}, name = "requirements.txt") {
  const file = path.join(model, name);
  fs.writeFileSync(file, text);
  const r = checkRequirementsFile(file, model, { model: "m", pip, env });
  return {
    ...r,
    found: r.diagnostics.map((d) => `${path.relative(model, d.file)}:${d.line}:${d.column} ${d.code}`),
  };
}

describe("requirements.txt checked before pip reads it", () => {
  it("reports index, find-links and trusted-host options at their line and column", () => {
    const r = check(
      [
        "numpy>=1.22",
        "--index-url https://evil.example/simple",
        "  -i https://evil.example/simple # short form",
        "--extra-index-url=https://other.example/simple/",
        "-f https://evil.example/wheels",
        "--find-links=/opt/wheels",
        "--trusted-host evil.example",
        "tdhello==1.0",
      ].join("\n"),
    );
    expect(r.found).toEqual([
      "requirements.txt:2:1 requirements-index",
      "requirements.txt:3:3 requirements-index",
      "requirements.txt:4:1 requirements-index",
      "requirements.txt:5:1 requirements-index",
      "requirements.txt:6:1 requirements-index",
      "requirements.txt:7:1 requirements-index",
    ]);
    expect(r.diagnostics[0]).toMatchObject({ severity: "error", model: "m" });
    expect(r.diagnostics[0]!.hint).toContain("PIP_INDEX_URL");
  });

  it("reports each kind of line by its own code, as the rule table lists them", () => {
    const r = check(
      [
        "--index-url https://evil.example/simple",
        "-r ../../secret.txt",
        "-e ./src",
        "--target /usr/lib/python3/dist-packages",
        "numpy",
      ].join("\n"),
    );
    expect(r.diagnostics.map((d) => d.code)).toEqual([
      "requirements-index",
      "requirements-outside-model",
      "requirements-editable",
      "requirements-install-location",
    ]);
    expect(JSON.stringify(r.diagnostics)).not.toContain("not-for-anyone");
  });

  it("allows a source the user's pip configuration already sets, and says where", () => {
    const pip = userPipSources({
      env: { PIP_EXTRA_INDEX_URL: "https://pypi.corp.example/simple/ https://b.example/simple" },
      home: "/home/u",
      platform: "linux",
      readFile: (f) =>
        f === "/home/u/.config/pip/pip.conf"
          ? "[global]\nindex-url = https://Mirror.Example/simple\ntrusted-host =\n  mirror.example\n"
          : undefined,
    });
    const r = check(
      "--index-url https://mirror.example/simple/\n--extra-index-url https://pypi.corp.example/simple\n--trusted-host mirror.example\n--extra-index-url https://c.example/simple\n",
      pip,
    );
    expect(r.found).toEqual(["requirements.txt:4:1 requirements-index"]);
    expect(r.allowed.map((a) => `${a.line} ${a.option} ${a.value} ${a.origin}`)).toEqual([
      "1 index-url https://mirror.example/simple/ /home/u/.config/pip/pip.conf",
      "2 extra-index-url https://pypi.corp.example/simple PIP_EXTRA_INDEX_URL",
      "3 trusted-host mirror.example /home/u/.config/pip/pip.conf",
    ]);
  });

  it("a find-links folder inside the model is its own: allowed", () => {
    expect(check("--find-links ./wheels\ntdlocal==1.0\n").found).toEqual([]);
  });

  it("reports -r and -c that leave the model folder, links followed, and never reads them", () => {
    const r = check(
      [
        "-r /etc/shadow",
        "-r ../../secret.txt",
        "--requirement=linked.txt",
        "-c https://example.com/constraints.txt",
        "--constraint ~/secret.txt",
        "tdhello==1.0",
      ].join("\n"),
    );
    expect(r.found).toEqual([
      "requirements.txt:1:1 requirements-outside-model",
      "requirements.txt:2:1 requirements-outside-model",
      "requirements.txt:3:1 requirements-outside-model",
      "requirements.txt:4:1 requirements-outside-model",
      "requirements.txt:5:1 requirements-outside-model",
    ]);
    expect(r.resolved).toBeUndefined();
    expect(JSON.stringify(r.diagnostics)).not.toContain("not-for-anyone");
  });

  it("inlines -r and -c files of the model, so the identity changes with them", () => {
    fs.writeFileSync(path.join(model, "more.txt"), "tdhello==1.0\n");
    fs.writeFileSync(path.join(model, "pins.txt"), "tdgreet<2\n");
    const first = check("-r more.txt\n-c pins.txt\ntdgreet\n");
    expect(first.found).toEqual([]);
    expect(first.resolved!.identity).toEqual(["-c tdgreet<2", "tdgreet", "tdhello==1.0"]);
    expect(first.resolved!.requirements.map((x) => `${path.basename(x.file!)}:${x.line} ${x.text}`)).toEqual([
      "more.txt:1 tdhello==1.0",
      "requirements.txt:3 tdgreet",
    ]);
    expect(pipRequirementsText(first.resolved!)).toBe("tdhello==1.0\ntdgreet\n");
    fs.writeFileSync(path.join(model, "more.txt"), "tdhello==1.1\n");
    expect(check("-r more.txt\n-c pins.txt\ntdgreet\n").resolved!.identity).toContain("tdhello==1.1");
  });

  it("reports a problem in an included file at its own line", () => {
    fs.writeFileSync(path.join(model, "more.txt"), "tdhello==1.0\n\n  --target /tmp/x\n");
    const r = check("-r more.txt\n-c more.txt\n");
    expect(r.found).toEqual(["more.txt:3:3 requirements-install-location"]);
  });

  it("a find-links folder of the model: pip gets its real path, the identity its files' content", () => {
    const first = check("--find-links ./wheels\ntdlocal==1.0\n");
    expect(first.found).toEqual([]);
    expect(pipRequirementsText(first.resolved!)).toBe(
      `--find-links ${fs.realpathSync(path.join(model, "wheels"))}\ntdlocal==1.0\n`,
    );
    const wheel = path.join(model, "wheels", "tdlocal-1.0-py3-none-any.whl");
    fs.writeFileSync(wheel, "other bytes");
    const second = check("--find-links ./wheels\ntdlocal==1.0\n");
    fs.writeFileSync(wheel, "");
    expect(second.resolved!.identity).not.toEqual(first.resolved!.identity);
    expect(check("--find-links ./wheels\ntdlocal==1.0\n").resolved!.identity).toEqual(first.resolved!.identity);
  });

  it("reads only regular files, without blocking: a FIFO, a link to /dev/zero, a file too large", () => {
    const fifo = path.join(model, "fifo.txt");
    execFileSync("mkfifo", [fifo]);
    const zero = path.join(model, "zero.txt");
    fs.symlinkSync("/dev/zero", zero);
    const large = path.join(model, "large.txt");
    fs.writeFileSync(large, "# x\n".repeat(MAX_REQUIREMENTS_BYTES / 2));
    try {
      const t0 = Date.now();
      const asFile = (name: string) => {
        const r = checkRequirementsFile(path.join(model, name), model, { model: "m", pip: NONE, env: {} });
        return r.diagnostics.map((d) => `${path.basename(d.file)}:${d.line}:${d.column} ${d.code} ${d.message}`);
      };
      expect(asFile("fifo.txt")).toEqual([
        "fifo.txt:1:1 requirements-unreadable fifo.txt is a FIFO, not a regular file",
      ]);
      expect(asFile("zero.txt")).toEqual([
        expect.stringMatching(
          /^zero\.txt:1:1 requirements-outside-model zero\.txt is a link that leads out of the model folder/,
        ),
      ]);
      expect(asFile("large.txt")).toEqual([
        expect.stringMatching(/^large\.txt:1:1 requirements-unreadable large\.txt is larger than 1024 KiB/),
      ]);
      expect(checkRequirementsFile(fifo, model, { pip: NONE, env: {} }).diagnostics[0]!.code).toBe(
        "requirements-unreadable",
      );
      // Included by -r: reported at the line that names it.
      expect(check("tdhello==1.0\n-r fifo.txt\n").found).toEqual(["requirements.txt:2:1 requirements-unreadable"]);
      expect(Date.now() - t0).toBeLessThan(10_000);
    } finally {
      for (const f of [fifo, zero, large]) fs.rmSync(f, { force: true });
    }
  });

  it("reports what the grammar refuses with the file, line and column", () => {
    const r = check("tdgreet==1.0\n--extra-index http://127.0.0.1:1/simple\npkg [x] @ file:///etc/passwd\n");
    expect(r.found).toEqual([
      "requirements.txt:2:1 requirements-syntax",
      "requirements.txt:3:9 requirements-direct-reference",
    ]);
    expect(r.diagnostics.map((d) => d.code)).toEqual(["requirements-syntax", "requirements-direct-reference"]);
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("tdgreet==1.0\n", "utf16le")]);
    fs.writeFileSync(path.join(model, "requirements.txt"), utf16);
    expect(
      checkRequirementsFile(path.join(model, "requirements.txt"), model, { pip: NONE, env: {} }).diagnostics.map(
        (d) => `${d.line}:${d.column} ${d.code}`,
      ),
    ).toEqual(["1:1 requirements-encoding"]);
  });

  it("leaves plain requirements, comments and harmless options alone", () => {
    expect(
      check(
        "# -r /etc/shadow\nnumpy>=1.22,<2  # pinned\n--no-index\n--prefer-binary\n--only-binary :all:\ntdgreet[extra]==1.0 ; python_version >= '3.8'\n",
      ).found,
    ).toEqual([]);
  });
});
