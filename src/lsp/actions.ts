import path from "node:path";
import { CONFIG_FILE } from "../repo/layout.js";
import { editDistance } from "../repo/suggest.js";
import { type LooseField, type LooseMessage, looseParse } from "./syntax.js";

/**
 * The quick fixes of lint's findings whose fix is mechanical, read from what the finding says
 * (its code and hint): the name a typo meant, the value to set, the file or folder to move.
 */

/** What a diagnostic carries for its fixes (the LSP diagnostic's `data`). */
export interface FixData {
  code: string;
  hint?: string;
  /** The file lint reported on (a folder for a folder's finding). */
  file: string;
}

export type Fix =
  | { title: string; kind: "replace"; start: number; end: number; text: string; preferred: boolean }
  | {
      title: string;
      kind: "rename";
      from: string;
      to: string;
      alsoReplace?: { start: number; end: number; text: string };
    };

const WORD = /[A-Za-z0-9_.-]/;

/** The word or quoted string at `offset`: its span, and the span inside the quotes when quoted. */
function wordAt(text: string, offset: number): { start: number; end: number; inner: { start: number; end: number } } {
  const q = text[offset];
  if (q === '"' || q === "'") {
    let e = offset + 1;
    while (e < text.length && text[e] !== q && text[e] !== "\n") e++;
    return { start: offset, end: e + 1, inner: { start: offset + 1, end: e } };
  }
  let s = offset;
  let e = offset;
  while (s > 0 && WORD.test(text[s - 1]!)) s--;
  while (e < text.length && WORD.test(text[e]!)) e++;
  return { start: s, end: e, inner: { start: s, end: e } };
}

/** The fixes of one finding at `offset` (where it points) of `text` (the config's text). */
export function fixesFor(data: FixData, text: string, offset: number): Fix[] {
  const hint = data.hint ?? "";
  const fixes: Fix[] = [];
  // A quoted name may hold any character (a TensorFlow tensor is "input_1:0").
  const meant =
    /Did you mean (?:([a-z_]+): )?'([^'\n]+)'\?/.exec(hint) ??
    /Did you mean (?:([a-z_]+): )?"?([A-Za-z0-9_.-]+)"?\?/.exec(hint);
  if (meant) {
    const w = wordAt(text, offset);
    const current = text.slice(w.inner.start, w.inner.end);
    // The finding points at the name or at its value; the fix replaces that word only.
    if (current && current !== meant[2]) {
      fixes.push({
        title: `Change '${current}' to '${meant[2]}'`,
        kind: "replace",
        start: w.inner.start,
        end: w.inner.end,
        text: meant[2]!,
        preferred: true,
      });
    }
  }
  const set = /^(?:Set|Write) ([a-z_]+): ([A-Za-z0-9_-]+)(?:\.| to )/.exec(hint);
  if (set) {
    const w = wordAt(text, offset);
    const current = text.slice(w.inner.start, w.inner.end);
    const before = text.slice(Math.max(0, w.start - 80), w.start);
    if (current && new RegExp(`\\b${set[1]}\\s*:\\s*$`).test(before)) {
      fixes.push({
        title: `Set ${set[1]}: ${set[2]}`,
        kind: "replace",
        start: w.inner.start,
        end: w.inner.end,
        text: set[2]!,
        preferred: true,
      });
    }
  }
  // The shape the model file gives (the batch dimension left out when the model batches).
  const dims = /^Set dims: \[([-0-9, ]*)\]/.exec(hint);
  if (dims && data.code === "model-io-dims") {
    const w = wordAt(text, offset);
    const rest = text.slice(w.end);
    const list = /^\s*:?\s*\[[^\]]*\]/.exec(rest);
    if (text.slice(w.start, w.end) === "dims" && list) {
      const start = w.end + list[0].indexOf("[");
      const shape = dims[1]!
        .split(",")
        .map((x) => x.trim())
        .filter(Boolean);
      fixes.push({
        title: `Set dims: [ ${shape.join(", ")} ]`,
        kind: "replace",
        start,
        end: w.end + list[0].length,
        text: `[ ${shape.join(", ")} ]`,
        preferred: true,
      });
    }
  }
  fixes.push(...valueFixes(data, hint, text, offset));
  if (data.code === "config-in-version-folder") {
    const modelDir = path.dirname(path.dirname(data.file));
    fixes.push({
      title: `Move ${path.basename(path.dirname(data.file))}/${CONFIG_FILE} to ${path.basename(modelDir)}/${CONFIG_FILE}`,
      kind: "rename",
      from: data.file,
      to: path.join(modelDir, CONFIG_FILE),
    });
  }
  const rename = /Rename the folder to '([^']+)'/.exec(hint);
  if (data.code === "model-name-unsafe" && rename) {
    const dir = data.file.endsWith(CONFIG_FILE) ? path.dirname(data.file) : data.file;
    const nameField = looseParse(text).fields.find((f) => f.name === "name");
    const v = nameField?.values.find((x) => x.kind === "scalar");
    fixes.push({
      title: `Rename the folder to '${rename[1]}'${v ? " and the config's name with it" : ""}`,
      kind: "rename",
      from: dir,
      to: path.join(path.dirname(dir), rename[1]!),
      ...(v ? { alsoReplace: { start: v.start, end: v.end, text: JSON.stringify(rename[1]) } } : {}),
    });
  }
  return fixes;
}

/** The nearest of true and false to a misspelt bool (`ture`, `flase`, `True`), when one is near. */
export function nearestBool(word: string): "true" | "false" | undefined {
  const w = word.toLowerCase();
  const t = editDistance(w, "true", 2);
  const f = editDistance(w, "false", 2);
  if (t <= 2 && t < f) return "true";
  if (f <= 2 && f < t) return "false";
  return undefined;
}

/** Fixes that rewrite the value (or remove the field) a finding points at, read from its hint. */
function valueFixes(data: FixData, hint: string, text: string, offset: number): Fix[] {
  const w = wordAt(text, offset);
  const current = text.slice(w.start, w.end);
  const quoted = current.startsWith('"') || current.startsWith("'");
  const replace = (title: string, to: string, preferred = true): Fix => ({
    title,
    kind: "replace",
    start: w.start,
    end: w.end,
    text: to,
    preferred,
  });
  const out: Fix[] = [];
  if (/ takes true or false\.$/.test(hint) && current && !quoted) {
    const b = nearestBool(current);
    if (b) out.push(replace(`Change '${current}' to '${b}'`, b));
  }
  if (hint.startsWith("Quote the value: ") && current && !quoted)
    out.push(replace(`Quote '${current}'`, JSON.stringify(current)));
  if (hint.startsWith("Write numbers without quotes: ") && quoted) {
    const inner = text.slice(w.inner.start, w.inner.end);
    if (/^[-+0-9.eExXa-fA-F]+$/.test(inner)) out.push(replace(`Write ${inner} without quotes`, inner));
  }
  if (data.code === "dims-invalid" && /^Use -1 /.test(hint) && /^-?\d+$/.test(current) && current !== "-1")
    out.push(replace(`Change ${current} to -1 (a variable size)`, "-1", current !== "0"));
  const colon = /^Separate the field and its value with a colon: ([a-z_]+):/.exec(hint);
  if (colon && text.slice(w.start, w.end) === colon[1]) {
    const gap = /^[ \t]*/.exec(text.slice(w.end))![0].length;
    out.push({
      title: `Add ':' after ${colon[1]}`,
      kind: "replace",
      start: w.end,
      end: w.end + gap,
      text: ": ",
      preferred: true,
    });
  }
  const add = /^Add (input|output) (\{ name: "[^"\n]*".*\}) to config\.pbtxt\.$/.exec(hint);
  if (add && data.code === "model-io-missing") {
    const at = addition(text, add[1]!, add[2]!);
    out.push({
      title: `Add ${add[1]} ${/"([^"]*)"/.exec(add[2]!)![0]} as the model file has it`,
      kind: "replace",
      ...at,
      end: at.start,
      preferred: true,
    });
  }
  const del = /^Delete (?:the )?([a-z_]+)(?: line)?[.,: ]/.exec(hint);
  if (del) {
    const field = fieldAt(looseParse(text), del[1]!, offset);
    if (field)
      out.push({ title: `Delete ${del[1]}`, kind: "replace", ...deletion(text, field), text: "", preferred: true });
  }
  return out;
}

/** The innermost field named `name` whose text holds `offset` (where the finding points). */
function fieldAt(m: LooseMessage, name: string, offset: number): LooseField | undefined {
  for (const f of m.fields) {
    if (offset < f.nameStart || offset > f.end) continue;
    for (const v of f.values) {
      if (v.kind === "message" && offset > v.start && offset < v.end) {
        const inner = fieldAt(v, name, offset);
        if (inner) return inner;
      }
    }
    if (f.name === name) return f;
  }
  return undefined;
}

/** The span removing a field: its whole lines when it has them to itself, else the field and the blanks after it. */
function deletion(text: string, f: LooseField): { start: number; end: number } {
  const lineStart = text.lastIndexOf("\n", f.nameStart - 1) + 1;
  let lineEnd = text.indexOf("\n", f.end);
  if (lineEnd < 0) lineEnd = text.length;
  const before = text.slice(lineStart, f.nameStart);
  const after = text.slice(f.end, lineEnd);
  if (/^\s*$/.test(before) && /^\s*(#.*)?$/.test(after))
    return { start: lineStart, end: Math.min(text.length, lineEnd + 1) };
  let end = f.end;
  while (end < text.length && (text[end] === " " || text[end] === "\t")) end++;
  return { start: f.nameStart, end };
}

/**
 * Where a tensor the model file has goes: after the last entry of the config's top-level `input`
 * (or `output`) list, on a line of its own when the list has them; a config without one gets the list.
 */
function addition(text: string, kind: string, entry: string): { start: number; text: string } {
  const field = looseParse(text)
    .fields.filter((f) => f.name === kind && f.values.length > 0)
    .pop();
  const last = field?.values[field.values.length - 1];
  if (!field || !last || last.kind !== "message") {
    const sep = text.length === 0 || text.endsWith("\n") ? "" : "\n";
    return { start: text.length, text: `${sep}${kind} [ ${entry} ]\n` };
  }
  const isList = text.slice(field.nameEnd, field.values[0]!.start).includes("[");
  const lineStart = text.lastIndexOf("\n", last.start - 1) + 1;
  const ownLine = /^\s*$/.test(text.slice(lineStart, last.start));
  const indent = ownLine ? /^[ \t]*/.exec(text.slice(lineStart))![0] : "";
  if (!isList)
    return {
      start: field.end,
      text: `\n${/^[ \t]*/.exec(text.slice(text.lastIndexOf("\n", field.nameStart - 1) + 1))![0]}${kind} ${entry}`,
    };
  return { start: last.end, text: ownLine ? `,\n${indent}${entry}` : `, ${entry}` };
}
