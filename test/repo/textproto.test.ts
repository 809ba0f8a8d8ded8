import { describe, expect, it } from "vitest";
import { TextSyntaxError, parseTree, positionAt, tokenize } from "../../src/repo/textproto.js";

function syntaxError(text: string): TextSyntaxError {
  try {
    parseTree(text);
  } catch (err) {
    if (err instanceof TextSyntaxError) return err;
    throw err;
  }
  throw new Error("expected a syntax error");
}

describe("tokenize", () => {
  it("gives every token its 1-based line and column", () => {
    const toks = tokenize('name: "a"\n  dims: [ -1, 3 ] # comment\n');
    expect(toks.map((t) => [t.type, t.pos.line, t.pos.column])).toEqual([
      ["identifier", 1, 1],
      [":", 1, 5],
      ["string", 1, 7],
      ["identifier", 2, 3],
      [":", 2, 7],
      ["[", 2, 9],
      ["-", 2, 11],
      ["int", 2, 12],
      [",", 2, 13],
      ["int", 2, 15],
      ["]", 2, 17],
      ["eof", 3, 1],
    ]);
  });

  it("reads numbers the way the protobuf text format does", () => {
    const toks = tokenize("0x1F 017 10 1.5 2e3 7f .5");
    expect(
      toks.slice(0, -1).map((t) => (t.type === "int" || t.type === "float" ? `${t.type}:${t.text}` : t.type)),
    ).toEqual(["int:0x1F", "int:017", "int:10", "float:1.5", "float:2e3", "float:7", "float:.5"]);
  });

  it("glues a minus to a following letter, as in -inf", () => {
    const toks = tokenize("-inf - 5");
    expect(toks[0]).toMatchObject({ type: "identifier", value: "-inf" });
    expect(toks[1]).toMatchObject({ type: "-" });
  });

  it("decodes string escapes", () => {
    const toks = tokenize(String.raw`'a\n\x41\101\u00e9' "b" `);
    expect(toks[0]).toMatchObject({ type: "string", value: "a\nAAé" });
  });

  it.each([
    ['name: "abc', 1, 7, "unterminated string"],
    ['name: "a\nb"', 1, 7, "a line break inside a string"],
    ["dims: 09", 1, 7, "invalid number '09'"],
    ["x: 1e", 1, 4, "invalid exponent in number"],
    ["a = 1", 1, 3, "unexpected '='"],
    ['name: "\\q"', 1, 8, "invalid escape \\q"],
    ['\uFEFFname: "m"', 1, 1, "unexpected byte-order mark"],
    [
      `name: "m"\n${Buffer.from([0x20, 0xff, 0xfe]).toString("utf8")}`,
      2,
      2,
      "unexpected byte that is not UTF-8 text (or a U+FFFD character)",
    ],
  ])("reports %j at %i:%i", (text, line, column, message) => {
    expect(() => tokenize(text)).toThrow(TextSyntaxError);
    try {
      tokenize(text);
    } catch (err) {
      expect(err).toMatchObject({ message, pos: { line, column } });
    }
  });
});

describe("parseTree", () => {
  it("builds fields, nested messages and lists with positions", () => {
    const { root } = parseTree(
      'input [ { name: "a" dims: [1, 2] } ]\ndynamic_batching < max_queue_delay_microseconds: 5 >;',
    );
    expect(root.fields.map((f) => f.name)).toEqual(["input", "dynamic_batching"]);
    const input = root.fields[0]!;
    expect(input.value.kind).toBe("list");
    if (input.value.kind !== "list") return;
    const item = input.value.items[0]!;
    expect(item.kind).toBe("message");
    if (item.kind !== "message") return;
    expect(item.fields.map((f) => [f.name, f.nameToken.pos.column])).toEqual([
      ["name", 11],
      ["dims", 21],
    ]);
    expect(root.fields[1]!.nameToken.pos).toMatchObject({ line: 2, column: 1 });
  });

  it("accepts the separators and empty lists the format allows", () => {
    expect(() => parseTree('a: 1; b: "x", c { } d: [] e: [ 1 ] f < >')).not.toThrow();
  });

  it("concatenates adjacent strings", () => {
    const { root } = parseTree("name: \"ab\" 'cd'");
    const v = root.fields[0]!.value;
    expect(v.kind === "scalar" && v.token.type === "string" ? v.token.value : undefined).toBe("abcd");
  });

  it.each([
    ['input {\n  name: "x"\n', 1, 7, "'{' is never closed", "Add the matching '}'."],
    ['name: "x"\n}', 2, 1, "unexpected '}'", "It closes nothing: remove it or add the opening '{' it belongs to."],
    [
      "dims: [1 2]",
      1,
      10,
      "expected ',' or ']' in the list of 'dims', found '2'",
      "Separate list elements with commas.",
    ],
    [
      "dims: [1, 2",
      1,
      12,
      "expected ',' or ']' in the list of 'dims', found end of file",
      "Close the list opened at 1:7 with ']'.",
    ],
    ["name:", 1, 6, "expected a value for 'name', found end of file", "Give 'name' a value, or delete the line."],
    ['"name": 1', 1, 1, "expected a field name, found a string", "Field names are written without quotes."],
    [
      "a: 1,, b: 2",
      1,
      6,
      "expected a field name, found ','",
      "A field name is missing before this, or a separator is doubled.",
    ],
    ["input { name: 'x' >", 1, 19, "unexpected '>'", "Expected '}' here."],
  ])("reports %j at %i:%i", (text, line, column, message, hint) => {
    const err = syntaxError(text);
    expect({ message: err.message, line: err.pos.line, column: err.pos.column, hint: err.hint }).toEqual({
      message,
      line,
      column,
      hint,
    });
  });

  it("refuses nesting deeper than 100 instead of overflowing the stack", () => {
    const deep = "a {".repeat(150) + "}".repeat(150);
    expect(syntaxError(deep).message).toBe("messages nested more than 100 deep");
  });
});

describe("positionAt", () => {
  it("maps offsets to 1-based positions", () => {
    expect(positionAt("ab\ncd", 4)).toEqual({ line: 2, column: 2, offset: 4 });
    expect(positionAt("ab", 99)).toEqual({ line: 1, column: 3, offset: 2 });
  });
});
