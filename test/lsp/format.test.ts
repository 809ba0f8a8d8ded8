import { describe, expect, it } from "vitest";
import { formatConfig, formatEdits } from "../../src/lsp/format.js";
import { applyEdits } from "./client.js";

// The edits the server sends give exactly the formatted text, whatever the line breaks, blank
// lines at either end, or a missing last line break.

const CASES: Record<string, string> = {
  tidy: 'name: "m"\nbackend: "python"\n',
  "no last line break": 'name: "m"\nbackend:"python"',
  "blank lines around": '\n\n  \nname: "m"\n\n\n\nmax_batch_size :   8\n\n  \n',
  "blank lines at the end, no last break": 'name: "m"\n\n   ',
  crlf: 'name :"m"\r\ninput [\r\n{ name: "x" }\r\n]\r\n\r\n\r\n',
  "crlf without last break": 'name: "m"\r\nbackend:  "python"',
  "strings and comments kept":
    'name: "a  :  b"   # note :  here\nparameters { key: "k" value: { string_value: "x:y" } }\n',
  empty: "",
};

describe("formatting edits", () => {
  for (const [name, text] of Object.entries(CASES)) {
    it(name, () => {
      const want = formatConfig(text);
      const edits = formatEdits(text)!;
      expect(applyEdits(text, edits)).toBe(want);
      if (want === text) expect(edits).toEqual([]);
      // The file's line break is kept.
      if (text.includes("\r\n")) expect(want!.replace(/\r\n/g, "")).not.toMatch(/\n/);
    });
  }

  it("spacing: one space after a colon, none before, one between tokens; comments and strings as written", () => {
    expect(formatConfig('backend :  "python"\ninput [ {  name:"x"   dims: [ -1 ]} ]   # a  note\n')).toBe(
      'backend: "python"\ninput [ { name: "x" dims: [ -1 ]} ]   # a  note\n',
    );
  });
});
