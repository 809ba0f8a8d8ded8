/**
 * The documentation Triton writes in its model_config.proto (the `//@@` comments its manual is
 * built from), read out by field and enum value: hover shows it. src/lsp/proto/model_config.proto
 * is Triton's file as published; src/lsp/gen/field-docs.ts is what this reads from it
 * (test/lsp/field-docs.test.ts keeps the two in step), so the server needs no .proto at run time.
 */

/**
 * Keys are protobuf names without the package: `ModelInput` (a message or enum),
 * `ModelInput.dims` (a field), `ModelInstanceGroup.Kind.KIND_GPU` (an enum value).
 */
export type ProtoDocs = Record<string, string>;

/** `//@@  .. cpp:var:: int64 dims (repeated)` and its kin: the manual's markup, not documentation. */
const DIRECTIVE = /^\.\.\s+cpp:/;

/** The `//@@` lines of a comment as paragraphs of plain text. */
function cleanDoc(lines: string[]): string {
  const body = lines.map((l) => l.replace(/^\s*\/\/@@/, "")).filter((l) => !DIRECTIVE.test(l.trim()));
  const paragraphs: string[] = [];
  let current: string[] = [];
  let literal = false;
  for (const raw of body) {
    const l = raw.trim();
    if (l === "") {
      if (current.length) paragraphs.push(literal ? current.join("\n") : current.join(" "));
      current = [];
      literal = false;
      continue;
    }
    // An indented block after "::" is an example; its lines keep their breaks.
    if (current.length === 0 && /^\s{8,}\S/.test(raw) && paragraphs.at(-1)?.endsWith("::")) literal = true;
    current.push(l);
  }
  if (current.length) paragraphs.push(literal ? current.join("\n") : current.join(" "));
  return paragraphs
    .map((p) => p.replace(/::$/, ":").replace(/:cpp:[a-z]+:`([^`]*)`/g, "`$1`"))
    .join("\n\n")
    .trim();
}

interface Scope {
  /** Absent for a oneof, whose fields belong to the message around it. */
  name?: string;
  kind: "message" | "enum" | "oneof";
}

/** Reads the documentation of every message, enum, field and enum value in a .proto's text. */
export function parseProtoDocs(text: string): ProtoDocs {
  const docs: ProtoDocs = {};
  const stack: Scope[] = [];
  let pending: Scope | undefined;
  let comment: string[] = [];
  const named = (): string[] => stack.filter((s) => s.name !== undefined).map((s) => s.name!);
  const inEnum = (): boolean => stack.at(-1)?.kind === "enum";
  const put = (key: string) => {
    const doc = cleanDoc(comment);
    if (doc) docs[key] = doc;
    comment = [];
  };

  for (const line of text.split("\n")) {
    const t = line.trim();
    if (t.startsWith("//@@")) {
      comment.push(line);
      continue;
    }
    if (t.startsWith("//") || t === "") continue;
    const decl = /^(message|enum|oneof)\s+(\w+)/.exec(t);
    if (decl) {
      const kind = decl[1] as Scope["kind"];
      const scope: Scope = kind === "oneof" ? { kind } : { kind, name: decl[2]! };
      if (kind !== "oneof") put([...named(), decl[2]!].join("."));
      else comment = [];
      if (t.includes("{")) stack.push(scope);
      else pending = scope;
      if (t.includes("}")) stack.pop();
      continue;
    }
    if (t.startsWith("{") && pending) {
      stack.push(pending);
      pending = undefined;
      if (t.includes("}")) stack.pop();
      continue;
    }
    if (t.startsWith("}")) {
      stack.pop();
      comment = [];
      continue;
    }
    const field = /^(?:repeated\s+|optional\s+)?(?:map\s*<[^>]+>|[\w.]+)\s+(\w+)\s*=\s*\d+/.exec(t);
    const value = /^(\w+)\s*=\s*-?\d+/.exec(t);
    if (inEnum() && value) put([...named(), value[1]!].join("."));
    else if (!inEnum() && field) put([...named(), field[1]!].join("."));
    else comment = [];
  }
  return docs;
}
