import fsp from "node:fs/promises";
import { retryFdLimit } from "../fd-limit.js";
import path from "node:path";
import type { DataTypeName } from "../model-config.js";
import type { ModelTensor } from "./onnx.js";

/**
 * The inputs and outputs of an OpenVINO IR (`model.xml`, versions 10 and 11), as the openvino
 * backend sees them through ov::Model: an input per `Parameter` layer, named by its output port's
 * tensor names (the layer's name when the port has none), typed by its `element_type`; an output
 * per `Result` layer, named and typed by the port that feeds it. Shapes are the ports' `<dim>`s,
 * `-1` or `?` (or a range) for a variable size. The weights (`model.bin`) are never opened.
 */

export class OpenVinoReadError extends Error {
  override name = "OpenVinoReadError";
  constructor(
    readonly file: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** An IR's XML is its graph only; one larger than this is not an IR. */
export const MAX_IR_XML_BYTES = 64 * 1024 * 1024;

const TYPES: Record<string, DataTypeName> = {
  f32: "TYPE_FP32",
  fp32: "TYPE_FP32",
  f16: "TYPE_FP16",
  fp16: "TYPE_FP16",
  f64: "TYPE_FP64",
  fp64: "TYPE_FP64",
  bf16: "TYPE_BF16",
  i8: "TYPE_INT8",
  i16: "TYPE_INT16",
  i32: "TYPE_INT32",
  i64: "TYPE_INT64",
  u8: "TYPE_UINT8",
  u16: "TYPE_UINT16",
  u32: "TYPE_UINT32",
  u64: "TYPE_UINT64",
  boolean: "TYPE_BOOL",
  bool: "TYPE_BOOL",
  string: "TYPE_STRING",
};

interface Port {
  id: string;
  precision?: string;
  names: string[];
  dims: number[];
}

interface Layer {
  id: string;
  name: string;
  type: string;
  elementType?: string;
  shape?: string;
  inputs: Port[];
  outputs: Port[];
}

const attr = (attrs: string, key: string): string | undefined => {
  const m = new RegExp(`(?:^|\\s)${key}\\s*=\\s*("([^"]*)"|'([^']*)')`).exec(attrs);
  return m ? unescapeXml(m[2] ?? m[3] ?? "") : undefined;
};

function unescapeXml(s: string): string {
  return s.replace(/&(lt|gt|amp|quot|apos);/g, (_, e: string) =>
    e === "lt" ? "<" : e === "gt" ? ">" : e === "amp" ? "&" : e === "quot" ? '"' : "'",
  );
}

/** `?`, `-1` and ranges (`1..10`) are a variable size. */
const dimOf = (s: string): number => (/^\d+$/.test(s.trim()) ? Number(s.trim()) : -1);

function typed(name: string, raw: string | undefined, dims: number[] | undefined): ModelTensor {
  const key = (raw ?? "").toLowerCase();
  const dataType = TYPES[key];
  return { name, fileType: raw ?? "undefined", ...(dataType ? { dataType } : {}), ...(dims ? { dims } : {}) };
}

export async function readOpenVinoModel(file: string): Promise<{ inputs: ModelTensor[]; outputs: ModelTensor[] }> {
  let text: string;
  try {
    const st = await fsp.stat(file);
    if (st.size > MAX_IR_XML_BYTES)
      throw new OpenVinoReadError(file, `${path.basename(file)} is ${st.size} bytes, larger than any IR's XML`);
    text = await retryFdLimit(() => fsp.readFile(file, "utf8"));
  } catch (err) {
    if (err instanceof OpenVinoReadError) throw err;
    throw new OpenVinoReadError(file, `cannot read ${path.basename(file)}`, { cause: err });
  }
  return parseOpenVinoXml(text, file);
}

/** The inputs and outputs of an IR's XML text (see the top of this file). */
export function parseOpenVinoXml(text: string, file = "model.xml"): { inputs: ModelTensor[]; outputs: ModelTensor[] } {
  if (!/<net[\s>]/.test(text))
    throw new OpenVinoReadError(file, `${path.basename(file)} is not an OpenVINO IR: it has no <net> element`);
  const layers = new Map<string, Layer>();
  const edges: Array<{ fromLayer: string; fromPort: string; toLayer: string }> = [];
  let layer: Layer | undefined;
  let section: "input" | "output" | undefined;
  let port: Port | undefined;
  let dimStart = -1;
  const tag = /<(\/?)([A-Za-z_][\w:.-]*)([^>]*?)(\/?)>/g;
  for (let m = tag.exec(text); m; m = tag.exec(text)) {
    const [, close, name, attrs = "", selfClose] = m;
    if (close) {
      if (name === "dim" && port && dimStart >= 0) {
        port.dims.push(dimOf(text.slice(dimStart, m.index)));
        dimStart = -1;
      } else if (name === "port") port = undefined;
      else if (name === "input" || name === "output") section = undefined;
      else if (name === "layer") layer = undefined;
      continue;
    }
    if (name === "layer") {
      const id = attr(attrs, "id") ?? "";
      layer = { id, name: attr(attrs, "name") ?? id, type: attr(attrs, "type") ?? "", inputs: [], outputs: [] };
      layers.set(id, layer);
      if (selfClose) layer = undefined;
    } else if (name === "data" && layer && !section) {
      layer.elementType ??= attr(attrs, "element_type");
      layer.shape ??= attr(attrs, "shape");
    } else if ((name === "input" || name === "output") && layer && !selfClose) {
      section = name;
    } else if (name === "port" && layer && section) {
      const p: Port = {
        id: attr(attrs, "id") ?? "",
        names: (attr(attrs, "names") ?? "")
          .split(/(?<!\\),/)
          .map((s) => s.replace(/\\,/g, ",").trim())
          .filter(Boolean),
        dims: [],
        ...(attr(attrs, "precision") ? { precision: attr(attrs, "precision")! } : {}),
      };
      (section === "input" ? layer.inputs : layer.outputs).push(p);
      port = selfClose ? undefined : p;
    } else if (name === "dim" && port && !selfClose) {
      dimStart = m.index + m[0].length;
    } else if (name === "edge") {
      edges.push({
        fromLayer: attr(attrs, "from-layer") ?? "",
        fromPort: attr(attrs, "from-port") ?? "",
        toLayer: attr(attrs, "to-layer") ?? "",
      });
    }
  }
  const inputs: ModelTensor[] = [];
  const outputs: ModelTensor[] = [];
  for (const l of layers.values()) {
    if (l.type === "Parameter") {
      const p = l.outputs[0];
      const dims =
        p && p.dims.length > 0
          ? p.dims
          : l.shape !== undefined
            ? l.shape
                .split(",")
                .filter((s) => s.trim() !== "")
                .map(dimOf)
            : undefined;
      inputs.push(typed(p?.names[0] ?? l.name, l.elementType ?? p?.precision, dims));
    } else if (l.type === "Result") {
      const e = edges.find((x) => x.toLayer === l.id);
      const from = e ? layers.get(e.fromLayer)?.outputs.find((p) => p.id === e.fromPort) : undefined;
      const dims = from?.dims ?? l.inputs[0]?.dims;
      outputs.push(typed(from?.names[0] ?? l.name, from?.precision ?? l.inputs[0]?.precision, dims));
    }
  }
  return { inputs, outputs };
}
