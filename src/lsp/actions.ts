import path from "node:path";
import { CONFIG_FILE } from "../repo/layout.js";
import { looseParse } from "./syntax.js";

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
  const meant = /Did you mean (?:([a-z_]+): )?["']?([A-Za-z0-9_.-]+)["']?\?/.exec(hint);
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
  const set = /^Set ([a-z_]+): ([A-Za-z0-9_-]+)\./.exec(hint);
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
