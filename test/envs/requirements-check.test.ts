import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkRequirementsFile, userPipSources, type PipSources } from "../../src/envs/requirements-check.js";

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

  it("reports -r, -c and paths that leave the model folder, links followed, and never reads them", () => {
    const r = check(
      [
        "-r /etc/shadow",
        "-r ../../secret.txt",
        "--requirement=linked.txt",
        "-c ${SECRET_DIR}/secret.txt",
        "../../wheels/x-1.0-py3-none-any.whl",
        "/opt/wheels/x-1.0-py3-none-any.whl",
        "x @ file:///opt/x-1.0.tar.gz",
        "-r https://example.com/requirements.txt",
        "./wheels/tdlocal-1.0-py3-none-any.whl",
        "tdhello @ https://files.example/tdhello-1.0-py3-none-any.whl",
      ].join("\n"),
      NONE,
      { SECRET_DIR: base },
    );
    expect(r.found).toEqual([
      "requirements.txt:1:1 requirements-outside-model",
      "requirements.txt:2:1 requirements-outside-model",
      "requirements.txt:3:1 requirements-outside-model",
      "requirements.txt:4:1 requirements-outside-model",
      "requirements.txt:5:1 requirements-outside-model",
      "requirements.txt:6:1 requirements-outside-model",
      "requirements.txt:7:1 requirements-outside-model",
      "requirements.txt:8:1 requirements-outside-model",
    ]);
    expect(JSON.stringify(r.diagnostics)).not.toContain("not-for-anyone");
  });

  it("follows -r into a file inside the model and reports its lines there", () => {
    fs.writeFileSync(path.join(model, "more.txt"), "tdhello==1.0\n\n  --target /tmp/x\n");
    const r = check("-r more.txt\n-c more.txt\n");
    expect(r.found).toEqual(["more.txt:3:3 requirements-install-location"]);
  });

  it("reports editable installs and install-location options, continuation lines joined", () => {
    const r = check(
      [
        "-e .",
        "--editable=git+https://example.com/x.git#egg=x",
        "--target /tmp/t",
        "--prefix=/usr/local",
        "--root \\",
        "  /",
        "--user",
        "--src /tmp/src",
        "tdhello==1.0 --hash=sha256:00",
      ].join("\n"),
    );
    expect(r.found).toEqual([
      "requirements.txt:1:1 requirements-editable",
      "requirements.txt:2:1 requirements-editable",
      "requirements.txt:3:1 requirements-install-location",
      "requirements.txt:4:1 requirements-install-location",
      "requirements.txt:5:1 requirements-install-location",
      "requirements.txt:7:1 requirements-install-location",
      "requirements.txt:8:1 requirements-install-location",
    ]);
  });

  it("leaves plain requirements, comments and harmless options alone", () => {
    expect(
      check(
        "# -r /etc/shadow\nnumpy>=1.22,<2  # pinned\n--no-index\n--prefer-binary\ntdgreet[extra]==1.0 ; python_version >= '3.8'\n",
      ).found,
    ).toEqual([]);
  });
});
