import type { ModelLayout } from "../repo/layout.js";
import { BACKENDS, PLATFORMS, ENSEMBLE_PLATFORM } from "../repo/backends.js";
import { type FileTensors, describeTensor } from "./model-tensors.js";
import { type FieldInfo, type Scope, docKey, docOf, fieldIn, fieldsOf, scopeAt } from "./schema.js";
import {
  type CursorContext,
  type LooseMessage,
  type LooseScalar,
  cursorContext,
  looseParse,
  scalarOf,
  stepMessages,
  tokenAt,
} from "./syntax.js";

/**
 * Completion, hover and go-to-definition on a config.pbtxt's text, against the schema and the
 * other models of its repository. Offsets are into the text; the server turns them into
 * positions.
 */

/** What the features need of the repository around the config. */
export interface ModelSource {
  /** This config's model. */
  self: string;
  names(): string[];
  /** A model's config as the editor has it (open) or the file does, with the file's path. */
  config(name: string): { file: string; text: string } | undefined;
  layout(name: string): ModelLayout | undefined;
  /** What runs a model (its backend or platform, as its config names them), when its config parsed. */
  runs(name: string): string | undefined;
  /** The inputs and outputs of a model's file (ONNX, OpenVINO), when it has one that reads. */
  tensors(name: string): Promise<FileTensors | undefined>;
}

export interface Completion {
  label: string;
  kind: "field" | "message" | "enum" | "value" | "model" | "tensor";
  detail?: string;
  documentation?: string;
  /** Text replacing [start, end); a snippet when `snippet` (tab stops `$0`). */
  insert: string;
  snippet?: boolean;
  start: number;
  end: number;
  /** Ask the editor to suggest again right after (a field whose value is an enum). */
  retrigger?: boolean;
}

/** A tensor declared in a config's `input` or `output`. */
export interface TensorDecl {
  name: string;
  dataType?: string;
  dims?: string;
  /** Offsets of the name's value. */
  start: number;
  end: number;
}

/** The inputs and outputs a config's text declares, read loosely (a config being edited still has them). */
export function tensorDecls(
  text: string,
  tree: LooseMessage = looseParse(text),
): { input: TensorDecl[]; output: TensorDecl[] } {
  const out = { input: [] as TensorDecl[], output: [] as TensorDecl[] };
  for (const f of tree.fields) {
    if (f.name !== "input" && f.name !== "output") continue;
    for (const v of f.values) {
      if (v.kind !== "message") continue;
      const nameField = v.fields.find((x) => x.name === "name");
      const nameValue = nameField?.values.find((x): x is LooseScalar => x.kind === "scalar");
      if (!nameValue) continue;
      const dimsField = v.fields.find((x) => x.name === "dims");
      const dims = dimsField?.values.filter((x): x is LooseScalar => x.kind === "scalar").map((x) => x.token.value);
      const dataType = scalarOf(v, "data_type");
      out[f.name].push({
        name: nameValue.token.value,
        ...(dataType ? { dataType } : {}),
        ...(dims ? { dims: `[${dims.join(", ")}]` } : {}),
        start: nameValue.start,
        end: nameValue.end,
      });
    }
  }
  return out;
}

const scopeOfPath = (ctx: CursorContext): Scope | undefined => scopeAt(ctx.path.map((p) => p.field.name));

/** The ensemble step message around the cursor, when it is inside one. */
function enclosingStep(ctx: {
  path: Array<{ field: { name: string }; message?: LooseMessage }>;
}): LooseMessage | undefined {
  for (let k = ctx.path.length - 1; k >= 1; k--) {
    if (ctx.path[k]!.field.name === "step" && ctx.path[k - 1]!.field.name === "ensemble_scheduling")
      return ctx.path[k]!.message;
  }
  return undefined;
}

function fieldDoc(info: FieldInfo): string | undefined {
  const own =
    info.doc ?? (info.mapField ? docOf(`${docKey(info.mapField.parent.typeName)}.${info.mapField.name}`) : undefined);
  const typeDoc = info.typeDoc ? docOf(info.typeDoc) : undefined;
  return [own, typeDoc && typeDoc !== own ? typeDoc : undefined].filter(Boolean).join("\n\n") || undefined;
}

export async function complete(
  text: string,
  offset: number,
  src: ModelSource,
  o: { snippets: boolean },
): Promise<Completion[]> {
  if (inComment(text, offset)) return [];
  const tree = looseParse(text);
  const ctx = cursorContext(text, offset, tree);
  // Inside a string only a value is completed (a model or tensor name), never a field name.
  if (ctx.quoted && ctx.position === "name") return [];
  const scope = scopeOfPath(ctx);
  if (!scope) return [];
  const start = ctx.prefixStart;
  const end = offset;
  if (ctx.position === "name")
    return capped(rankByPrefix(nameCompletions(ctx, scope, start, end, o), ctx.prefix), ctx.prefix);
  return capped(rankByPrefix(await valueCompletions(text, offset, tree, ctx, scope, src), ctx.prefix), ctx.prefix);
}

/**
 * The most items one completion answer holds: a repository of 20,000 models would otherwise send
 * every name on each keystroke (megabytes). A longer list keeps the items that contain what is
 * typed, and the server marks the answer incomplete so the editor asks again as the prefix grows.
 */
export const MAX_COMPLETIONS = 100;

function capped(items: Completion[], prefix: string): Completion[] {
  if (items.length <= MAX_COMPLETIONS) return items;
  const p = prefix.replace(/^["']/, "").toLowerCase();
  return (p ? items.filter((c) => c.label.toLowerCase().includes(p)) : items).slice(0, MAX_COMPLETIONS);
}

/** Whether the cursor is after a `#` that starts a comment on its line (not one inside a string). */
function inComment(text: string, offset: number): boolean {
  const line = text.slice(text.lastIndexOf("\n", offset - 1) + 1, offset);
  let quote: string | undefined;
  for (let k = 0; k < line.length; k++) {
    const c = line[k]!;
    if (quote) {
      if (c === "\\") k++;
      else if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === "#") return true;
  }
  return false;
}

/** Names that begin with what is typed first (editors filter; this orders what they keep). */
function rankByPrefix(items: Completion[], prefix: string): Completion[] {
  if (!prefix) return items;
  const p = prefix.toLowerCase();
  const starts = (c: Completion) => (c.label.toLowerCase().startsWith(p) ? 0 : 1);
  return items
    .map((c, i) => ({ c, i }))
    .sort((a, b) => starts(a.c) - starts(b.c) || a.i - b.i)
    .map((x) => x.c);
}

function nameCompletions(
  ctx: CursorContext,
  scope: Scope,
  start: number,
  end: number,
  o: { snippets: boolean },
): Completion[] {
  const offset = end;
  const present = new Set(
    ctx.message.fields.filter((f) => f.nameEnd < start || f.nameStart > offset).map((f) => f.name),
  );
  const fields = fieldsOf(scope);
  // A oneof holds one member (version_policy's latest | all | specific, the scheduling choice):
  // once one is set, lint refuses a second, so none is offered.
  const setOneofs = new Set(
    fields.filter((f) => present.has(f.name) && f.field?.oneof).map((f) => f.field!.oneof!.name),
  );
  return fields
    .filter((f) => f.repeated || !present.has(f.name))
    .filter((f) => !(f.field?.oneof && setOneofs.has(f.field.oneof.name)))
    .map((f): Completion => {
      const doc = fieldDoc(f);
      let insert: string;
      if (!f.isMessage) insert = f.repeated ? (o.snippets ? `${f.name}: [ $0 ]` : `${f.name}: [ ]`) : `${f.name}: `;
      else if (f.repeated && f.field?.fieldKind === "list")
        insert = o.snippets ? `${f.name} [\n  {\n    $0\n  }\n]` : `${f.name} [\n  {\n  }\n]`;
      else insert = o.snippets ? `${f.name} {\n  $0\n}` : `${f.name} {\n}`;
      return {
        label: f.name,
        kind: f.isMessage ? "message" : "field",
        detail: f.type,
        ...(doc ? { documentation: doc } : {}),
        insert,
        snippet: o.snippets,
        start,
        end,
        ...(f.enum && !f.repeated ? { retrigger: true } : {}),
      };
    });
}

async function valueCompletions(
  text: string,
  offset: number,
  tree: LooseMessage,
  ctx: CursorContext,
  scope: Scope,
  src: ModelSource,
): Promise<Completion[]> {
  const start = ctx.prefixStart;
  let end = offset;
  const field = ctx.field ? fieldIn(scope, ctx.field.name) : undefined;
  if (!field) return [];
  if (ctx.quoted && text[offset] === text[ctx.prefixStart]) end = offset + 1;
  const str = (label: string, kind: Completion["kind"], detail?: string, documentation?: string): Completion => ({
    label,
    kind,
    ...(detail ? { detail } : {}),
    ...(documentation ? { documentation } : {}),
    insert: JSON.stringify(label),
    start,
    end,
  });
  if (field.enum) {
    const en = field.enum;
    // TYPE_INVALID is the enum's zero, which lint (like Triton) refuses as a tensor's type.
    return en.values
      .filter((v) => v.name !== "TYPE_INVALID")
      .map((v) => {
        const doc = docOf(`${docKey(en.typeName)}.${v.name}`);
        return {
          label: v.name,
          kind: "enum",
          detail: en.name,
          ...(doc ? { documentation: doc } : {}),
          insert: v.name,
          start,
          end,
        };
      });
  }
  if (field.type === "bool") return ["true", "false"].map((v) => ({ label: v, kind: "value", insert: v, start, end }));

  const parentName = ctx.path.at(-1)?.field.name;
  const step = enclosingStep(ctx);
  if (field.name === "model_name" && parentName === "step" && step) {
    // Of a repository's thousands of names, only those an answer can hold are looked at (see capped).
    const p = ctx.prefix.replace(/^["']/, "").toLowerCase();
    const fits = src.names().filter((n) => n !== src.self && (!p || n.toLowerCase().includes(p)));
    const first = p
      ? [...fits.filter((n) => n.toLowerCase().startsWith(p)), ...fits.filter((n) => !n.toLowerCase().startsWith(p))]
      : fits;
    return first.slice(0, MAX_COMPLETIONS + 1).map((n) => {
      const backend = src.runs(n);
      return str(n, "model", backend ? `model (${backend})` : "model");
    });
  }
  if ((parentName === "input_map" || parentName === "output_map") && step) {
    const stepModel = scalarOf(step, "model_name");
    if (field.name === "key") {
      if (!stepModel) return [];
      const c = src.config(stepModel);
      const decls = c ? tensorDecls(c.text)[parentName === "input_map" ? "input" : "output"] : [];
      return decls.map((d) =>
        str(d.name, "tensor", `${stepModel} ${parentName === "input_map" ? "input" : "output"}`, declText(d)),
      );
    }
    if (field.name === "value") {
      const own = tensorDecls(text, tree);
      if (parentName === "output_map") {
        return own.output.map((d) => str(d.name, "tensor", "ensemble output", declText(d)));
      }
      // An input_map value is an ensemble input or what another step wrote.
      const produced = new Set<string>();
      for (const s of stepMessages(tree)) {
        if (s === step) continue;
        for (const f of s.fields.filter((x) => x.name === "output_map"))
          for (const m of f.values)
            if (m.kind === "message") {
              const v = scalarOf(m, "value");
              if (v) produced.add(v);
            }
      }
      return [
        ...own.input.map((d) => str(d.name, "tensor", "ensemble input", declText(d))),
        ...[...produced].map((n) => str(n, "tensor", "written by another step")),
      ];
    }
  }
  if (field.name === "name" && (parentName === "input" || parentName === "output") && ctx.path.length === 1) {
    const layout = src.layout(src.self);
    const t = layout ? await src.tensors(src.self) : undefined;
    if (!t) return [];
    return (parentName === "input" ? t.inputs : t.outputs).map((x) =>
      str(x.name, "tensor", describeTensor(x), `${parentName} of ${t.file.split("/").slice(-2).join("/")}`),
    );
  }
  if (field.name === "dims" && (parentName === "input" || parentName === "output") && ctx.path.length === 1) {
    const entry = ctx.path[0]!.message!;
    const name = scalarOf(entry, "name");
    const t = name ? await src.tensors(src.self) : undefined;
    const tensor = t && (parentName === "input" ? t.inputs : t.outputs).find((x) => x.name === name);
    if (!t || !tensor?.dims) return [];
    const batched = Number(scalarOf(tree, "max_batch_size") ?? "0") > 0;
    const dims = batched ? tensor.dims.slice(1) : tensor.dims;
    const listOpen = text.lastIndexOf("[", offset) > text.lastIndexOf(":", offset);
    const body = dims.join(", ");
    return [
      {
        label: listOpen ? body : `[ ${body} ]`,
        kind: "value",
        detail: `${name} in ${t.file.split("/").slice(-2).join("/")}`,
        documentation: `The model file declares ${describeTensor(tensor)}${batched ? "; the first dimension is the batch (max_batch_size > 0)" : ""}.`,
        insert: listOpen ? body : `[ ${body} ]`,
        start,
        end,
      },
    ];
  }
  if (field.name === "backend" && ctx.path.length === 0)
    return Object.keys(BACKENDS).map((b) => str(b, "value", "backend"));
  if (field.name === "platform" && ctx.path.length === 0)
    return [...Object.keys(PLATFORMS), ENSEMBLE_PLATFORM].map((p) => str(p, "value", "platform"));
  return [];
}

function declText(d: TensorDecl): string | undefined {
  return d.dataType || d.dims ? `${d.dataType ?? "?"} ${d.dims ?? ""}`.trim() : undefined;
}

export interface Hover {
  markdown: string;
  start: number;
  end: number;
}

export async function hover(text: string, offset: number, src: ModelSource): Promise<Hover | undefined> {
  const tree = looseParse(text);
  const at = tokenAt(tree, offset);
  if (!at) return undefined;
  const names = at.path.map((f) => f.name);
  const scope = scopeAt(names.slice(0, -1));
  if (!scope) return undefined;
  const info = fieldIn(scope, names.at(-1)!);
  if (!info) return undefined;
  const { start, end } = at.token;
  if (at.role === "name") {
    const doc = fieldDoc(info);
    return { markdown: `**${info.name}** \`${info.type}\`${doc ? `\n\n${doc}` : ""}`, start, end };
  }
  const value = at.token.value;
  if (info.enum) {
    const v = info.enum.values.find((x) => x.name === value);
    if (!v) return undefined;
    const doc = docOf(`${docKey(info.enum.typeName)}.${v.name}`);
    return { markdown: `**${v.name}** (${info.enum.name} = ${v.number})${doc ? `\n\n${doc}` : ""}`, start, end };
  }
  const parent = names.at(-2);
  const stepMsg = enclosingStep({ path: at.path.map((f, k) => ({ field: f, message: at.messages[k + 1] })) });
  if (info.name === "model_name" && parent === "step") return modelHover(value, src, start, end);
  if ((parent === "input_map" || parent === "output_map") && info.name === "key" && stepMsg) {
    const stepModel = scalarOf(stepMsg, "model_name");
    const c = stepModel ? src.config(stepModel) : undefined;
    if (!stepModel || !c) return undefined;
    const kind = parent === "input_map" ? "input" : "output";
    const d = tensorDecls(c.text)[kind].find((x) => x.name === value);
    return {
      markdown: d
        ? `**${value}**: ${kind} of \`${stepModel}\`, ${declText(d) ?? "type and shape not given"}`
        : `\`${stepModel}\` declares no ${kind} '${value}'`,
      start,
      end,
    };
  }
  if (info.name === "name" && (parent === "input" || parent === "output") && at.path.length === 2) {
    const t = await src.tensors(src.self);
    const tensor = t && (parent === "input" ? t.inputs : t.outputs).find((x) => x.name === value);
    if (!t) return undefined;
    return {
      markdown: tensor
        ? `**${value}**: ${parent} of the model file \`${t.file.split("/").slice(-2).join("/")}\`: \`${describeTensor(tensor)}\``
        : `The model file \`${t.file.split("/").slice(-2).join("/")}\` has no ${parent} '${value}' (its ${parent}s: ${(parent === "input" ? t.inputs : t.outputs).map((x) => x.name).join(", ") || "none"})`,
      start,
      end,
    };
  }
  const doc = fieldDoc(info);
  return doc ? { markdown: `**${info.name}** \`${info.type}\`\n\n${doc}`, start, end } : undefined;
}

function modelHover(name: string, src: ModelSource, start: number, end: number): Hover {
  const c = src.config(name);
  if (!c) return { markdown: `No model '${name}' in this repository`, start, end };
  const tree = looseParse(c.text);
  const decls = tensorDecls(c.text, tree);
  const runs = scalarOf(tree, "backend") ?? scalarOf(tree, "platform") ?? "backend not named";
  const list = (ds: TensorDecl[]) => ds.map((d) => `\`${d.name}\` ${declText(d) ?? ""}`.trim()).join(", ") || "none";
  return {
    markdown: `**${name}** (${runs})\n\ninputs: ${list(decls.input)}\n\noutputs: ${list(decls.output)}`,
    start,
    end,
  };
}

export interface Location {
  file: string;
  /** Offsets in that file's text. */
  start: number;
  end: number;
}

export function definition(text: string, offset: number, src: ModelSource, selfFile: string): Location | undefined {
  const tree = looseParse(text);
  const at = tokenAt(tree, offset);
  if (!at || at.role !== "value") return undefined;
  const names = at.path.map((f) => f.name);
  const leaf = names.at(-1);
  const parent = names.at(-2);
  const value = at.token.value;
  const stepMsg = enclosingStep({ path: at.path.map((f, k) => ({ field: f, message: at.messages[k + 1] })) });
  if (leaf === "model_name" && parent === "step") {
    const c = src.config(value);
    if (!c) return undefined;
    const nameField = looseParse(c.text).fields.find((f) => f.name === "name");
    return { file: c.file, start: nameField?.nameStart ?? 0, end: nameField?.end ?? 0 };
  }
  if ((parent === "input_map" || parent === "output_map") && stepMsg) {
    if (leaf === "key") {
      const stepModel = scalarOf(stepMsg, "model_name");
      const c = stepModel ? src.config(stepModel) : undefined;
      if (!c) return undefined;
      const d = tensorDecls(c.text)[parent === "input_map" ? "input" : "output"].find((x) => x.name === value);
      return d ? { file: c.file, start: d.start, end: d.end } : { file: c.file, start: 0, end: 0 };
    }
    if (leaf === "value") {
      const own = tensorDecls(text, tree);
      const decl = (parent === "input_map" ? own.input : own.output).find((x) => x.name === value);
      if (decl) return { file: selfFile, start: decl.start, end: decl.end };
      if (parent === "input_map") {
        // Written by another step's output_map.
        for (const s of stepMessages(tree)) {
          for (const f of s.fields.filter((x) => x.name === "output_map"))
            for (const m of f.values) {
              if (m.kind !== "message") continue;
              const v = m.fields.find((x) => x.name === "value");
              const sv = v?.values.find((x): x is LooseScalar => x.kind === "scalar");
              if (sv && sv.token.value === value && s !== stepMsg)
                return { file: selfFile, start: sv.start, end: sv.end };
            }
        }
      }
    }
  }
  return undefined;
}
