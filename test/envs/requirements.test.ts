import { describe, expect, it } from "vitest";
import {
  canonicalName,
  decodeRequirements,
  environmentKey,
  lineNaming,
  parseRequirements,
  parseRequirementsText,
  requirementSpec,
  type EnvironmentBase,
} from "../../src/envs/requirements.js";

const BASE: EnvironmentBase = {
  pythonVersion: "3.11.7",
  soabi: "cpython-311-x86_64-linux-gnu",
  sitePackages: "/home/u/.cache/triton-dev/venv/lib/python3.11/site-packages",
  pins: ["numpy==1.26.4"],
};

const HASH = `sha256:${"a".repeat(64)}`;
const HASH2 = `sha256:${"b".repeat(64)}`;

/** What the grammar refuses, `line:column code`. */
function refused(text: string): string[] {
  return parseRequirementsText(text).problems.map((p) => `${p.line}:${p.column} ${p.code}`);
}

/** The identity of a single file's text (what requirements-check builds for a whole model). */
function identity(text: string): string[] {
  const p = parseRequirementsText(text);
  expect(p.problems).toEqual([]);
  return [...new Set(p.requirements.map(requirementSpec))].sort();
}

describe("the requirements.txt grammar", () => {
  it("reads names, extras, versions, markers, hashes, comments and continuations, and where each starts", () => {
    const text = [
      "# the model's packages",
      "",
      "  Tokenizers_Lite>=0.3  # fast enough",
      "--extra-index-url https://download.pytorch.org/whl/cpu",
      "torch==2.3.1+cpu \\",
      `    --hash=${HASH}`,
      "pkg [Security , socks] ( >= 1.0 , < 2 ) ; python_version >= '3.8' and (sys_platform == \"linux\" or os_name != 'nt')",
      "other~=1.4.2\r",
      "tdgreet==1.*",
    ].join("\n");
    expect(parseRequirements(text)).toEqual([
      { line: 3, column: 3, text: "tokenizers-lite>=0.3", name: "tokenizers-lite", hashes: [] },
      { line: 5, column: 1, text: "torch==2.3.1+cpu", name: "torch", hashes: [HASH] },
      {
        line: 7,
        column: 1,
        text: 'pkg[security,socks]>=1.0,<2; python_version >= "3.8" and (sys_platform == "linux" or os_name != "nt")',
        name: "pkg",
        hashes: [],
      },
      { line: 8, column: 1, text: "other~=1.4.2", name: "other", hashes: [] },
      { line: 9, column: 1, text: "tdgreet==1.*", name: "tdgreet", hashes: [] },
    ]);
    expect(parseRequirementsText(text).directives).toEqual([
      {
        kind: "extra-index-url",
        option: "--extra-index-url",
        value: "https://download.pytorch.org/whl/cpu",
        line: 4,
        column: 1,
      },
    ]);
  });

  it("takes a UTF-8 BOM, a utf-8 coding line and any UTF-8 in comments", () => {
    const bytes = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      Buffer.from("# -*- coding: utf-8 -*-\ntdgreet==1.0  # Grüße …\n"),
    ]);
    const d = decodeRequirements(bytes);
    expect("text" in d && parseRequirementsText(d.text)).toMatchObject({
      problems: [],
      requirements: [{ name: "tdgreet" }],
    });
  });

  it("finds the line naming a distribution the way pip compares names", () => {
    const reqs = parseRequirements("numpy>=2\nMy.Package_x==1\n");
    expect(lineNaming(reqs, "my-package-X")?.line).toBe(2);
    expect(lineNaming(reqs, "NumPy")?.line).toBe(1);
    expect(lineNaming(reqs, "scipy")).toBeUndefined();
    expect(canonicalName("Foo__Bar.baz")).toBe("foo-bar-baz");
  });

  describe("refuses each way past the old checks, at its line and column", () => {
    it("a comment ending in `\\`, which pip does not join to the option on the next line", () => {
      expect(refused("tdgreet==1.0\n# pinned for now \\\n--index-url http://127.0.0.1:1/simple\n")).toEqual([
        "2:18 requirements-syntax",
      ]);
      // A requirement's trailing comment ending in `\`: pip joins that one, so it is refused too.
      expect(refused("tdgreet==1.0 # pinned \\\n--index-url http://127.0.0.1:1/simple\n")).toEqual([
        "1:23 requirements-syntax",
      ]);
    });

    it.each([
      ["\\r", "\r"],
      ["\\v", "\v"],
      ["\\f", "\f"],
      ["\\x1c", "\x1c"],
      ["\\x1d", "\x1d"],
      ["\\x1e", "\x1e"],
      ["\\x85", "\x85"],
      ["\\u2028", "\u2028"],
      ["\\u2029", "\u2029"],
    ])("%s as a line break (Python's splitlines ends a line there)", (_name, brk) => {
      const text = `tdgreet==1.0\n# note${brk}--index-url http://127.0.0.1:1/simple\n`;
      const p = parseRequirementsText(text);
      expect(p.problems.map((x) => `${x.line}:${x.column} ${x.code}`)).toEqual(["2:7 requirements-syntax"]);
      expect(p.problems[0]!.message).toMatch(/pip ends a line at it/);
      expect(p.directives).toEqual([]);
    });

    it("other control characters, outside comments and in them", () => {
      expect(refused("tdgreet==1.0\x00\n# a\x1bb\n")).toEqual(["1:13 requirements-syntax", "2:4 requirements-syntax"]);
    });

    it.each([
      ["--extra-index http://127.0.0.1:1/simple", "--extra-index-url"],
      ["--index=http://127.0.0.1:1/simple", "--index-url"],
      ["--find http://127.0.0.1:1/links", "--find-links"],
      ["--trusted 127.0.0.1", "--trusted-host"],
      ["--requirem /etc/passwd", "--requirement"],
      ["--constr /etc/passwd", "--constraint"],
      ["--edit /tmp", "--editable"],
      ["--extra-index-ur=http://127.0.0.1:1/simple", "--extra-index-url"],
    ])("pip's abbreviation `%s`", (line, meant) => {
      const p = parseRequirementsText(`tdgreet==1.0\n  ${line}\n`);
      expect(p.problems.map((x) => `${x.line}:${x.column} ${x.code}`)).toEqual(["2:3 requirements-syntax"]);
      expect(p.problems[0]!.message).toContain(`pip would read it as ${meant}`);
      expect(p.directives).toEqual([]);
    });

    it("escapes, quotes and `${VAR}`, which pip's shlex and its expansion read otherwise", () => {
      expect(
        refused(
          [
            "-\\-index-url=http://127.0.0.1:1/simple",
            "--index-url 'http://127.0.0.1:1/simple'",
            "--find-links ${HOME}/wheels",
            "tdgreet==1.0 --hash='sha256:00'",
            "tdgreet==1.0 \\\\",
          ].join("\n"),
        ),
      ).toEqual([
        "1:2 requirements-syntax",
        "2:13 requirements-syntax",
        "3:14 requirements-syntax",
        "4:14 requirements-syntax",
        "5:14 requirements-syntax",
      ]);
    });

    it("a direct reference, a path or a URL in place of a name", () => {
      expect(
        refused(
          [
            "pkg [x] @ file:///etc/passwd",
            "tdhello @ https://files.example/tdhello-1.0-py3-none-any.whl",
            "./wheels/tdlocal-1.0-py3-none-any.whl",
            "tdlocal-1.0-py3-none-any.whl",
            "/opt/x",
            "https://files.example/x-1.0.tar.gz",
            "git+https://example.com/x.git#egg=x",
            "wheels/x",
          ].join("\n"),
        ),
      ).toEqual([
        "1:9 requirements-direct-reference",
        "2:9 requirements-direct-reference",
        "3:1 requirements-direct-reference",
        "4:1 requirements-direct-reference",
        "5:1 requirements-direct-reference",
        "6:1 requirements-direct-reference",
        "7:1 requirements-direct-reference",
        "8:1 requirements-direct-reference",
      ]);
    });

    it("options on a requirement's line other than --hash, and malformed hashes", () => {
      expect(
        refused(
          [
            "tdgreet==1.0 --index-url http://127.0.0.1:1/simple",
            "tdgreet==1.0 --global-option=--x",
            "tdgreet==1.0 --has=" + HASH,
            "tdgreet==1.0 --hash=md5:00",
            "--hash=" + HASH,
          ].join("\n"),
        ),
      ).toEqual([
        "1:14 requirements-syntax",
        "2:14 requirements-syntax",
        "3:14 requirements-syntax",
        "4:14 requirements-syntax",
        "5:1 requirements-syntax",
      ]);
    });

    it("editable installs and install locations, by their own codes", () => {
      expect(refused("-e .\n--editable=./src\n--target /tmp/t\n--prefix=/usr\n--root /\n--user\n--src /tmp\n")).toEqual(
        [
          "1:1 requirements-editable",
          "2:1 requirements-editable",
          "3:1 requirements-install-location",
          "4:1 requirements-install-location",
          "5:1 requirements-install-location",
          "6:1 requirements-install-location",
          "7:1 requirements-install-location",
        ],
      );
    });

    it("non-ASCII outside a comment, unknown marker variables, stray text", () => {
      expect(
        refused(
          ["tdgrëet==1.0", "tdgreet==1.0; python_versio >= '3'", "tdgreet==1.0 extra", "tdgreet == -1"].join("\n"),
        ),
      ).toEqual([
        "1:5 requirements-syntax",
        "2:15 requirements-syntax",
        "3:14 requirements-syntax",
        "4:12 requirements-syntax",
      ]);
    });
  });

  describe("the encoding pip would pick", () => {
    it("refuses UTF-16 and UTF-32 with a BOM", () => {
      const utf16 = Buffer.concat([
        Buffer.from([0xff, 0xfe]),
        Buffer.from("--index-url http://127.0.0.1:1/\n", "utf16le"),
      ]);
      const d = decodeRequirements(utf16);
      expect("problem" in d && d.problem).toMatchObject({ line: 1, column: 1, code: "requirements-encoding" });
      expect("problem" in decodeRequirements(Buffer.from([0xfe, 0xff, 0, 0x61]))).toBe(true);
      expect("problem" in decodeRequirements(Buffer.from([0xff, 0xfe, 0, 0, 0x61, 0, 0, 0]))).toBe(true);
    });

    it.each(["utf-7", "latin-1", "UTF_16", "ascii"])("refuses a coding declaration of %s", (enc) => {
      const d = decodeRequirements(
        Buffer.from(`tdgreet==1.0\n# -*- coding: ${enc} -*-\n+AAo---index-url http://127.0.0.1:1/\n`),
      );
      expect("problem" in d && d.problem).toMatchObject({ line: 2, column: 7, code: "requirements-encoding" });
    });

    it("refuses bytes that are not UTF-8, at their line", () => {
      const d = decodeRequirements(Buffer.from([0x61, 0x0a, 0x62, 0xff, 0x0a]));
      expect("problem" in d && d.problem).toMatchObject({ line: 2, code: "requirements-encoding" });
    });
  });
});

describe("the environment's identity", () => {
  it("ignores order, comments, blank lines, spacing and how a name is written", () => {
    const a = identity("tdgreet==1.0\nrequests  >=2, <3  # http\n");
    const b = identity("\n# deps\nRequests>=2,<3\n\nTdGreet == 1.0");
    expect(a).toEqual(["requests>=2,<3", "tdgreet==1.0"]);
    expect(a).toEqual(b);
    expect(environmentKey(a, BASE)).toBe(environmentKey(b, BASE));
  });

  it("changes with the hashes, the requirements, the stub's Python, its ABI and its pinned packages", () => {
    const reqs = identity("tdgreet==1.0");
    const key = environmentKey(reqs, BASE);
    expect(environmentKey(identity(`tdgreet==1.0 --hash=${HASH}`), BASE)).not.toBe(key);
    expect(identity(`tdgreet==1.0 --hash=${HASH2} --hash=${HASH}`)).toEqual(
      identity(`tdgreet==1.0 --hash ${HASH} --hash=${HASH2}`),
    );
    expect(environmentKey(identity("tdgreet==2.0"), BASE)).not.toBe(key);
    expect(environmentKey(reqs, { ...BASE, pythonVersion: "3.12.1" })).not.toBe(key);
    expect(environmentKey(reqs, { ...BASE, soabi: "cpython-311-aarch64-linux-gnu" })).not.toBe(key);
    expect(environmentKey(reqs, { ...BASE, pins: ["numpy==1.26.3"] })).not.toBe(key);
    expect(key).toMatch(/^[0-9a-f]{20}$/);
  });

  it("has nothing to build for a file of comments", () => {
    expect(identity("# nothing yet\n\n   \n")).toEqual([]);
  });
});
