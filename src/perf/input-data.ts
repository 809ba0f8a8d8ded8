import fsp from "node:fs/promises";
import { UserError } from "../errors.js";

/** One input's value in one step of an --input-data file; `shape` excludes the batch dimension. */
export interface DataValue {
  shape?: number[];
  /** The values, flattened row-major. */
  content?: unknown[];
  /** Raw bytes: the tensor's row-major content, or for BYTES the bytes of one element. */
  b64?: Buffer;
}

/** One request's worth of values, by input name, in the file's order. */
export type DataStep = Map<string, DataValue>;

export interface LoadedInputData {
  file: string;
  steps: DataStep[];
}

/**
 * Something in an --input-data file is wrong: which step (1-based) and which input, where the
 * fault is that narrow, so the user finds the line to fix.
 */
export class InputDataError extends UserError {
  override name = "InputDataError";
  constructor(
    readonly file: string,
    readonly step: number | undefined,
    readonly input: string | undefined,
    what: string,
    options: { hint?: string; cause?: unknown } = {},
  ) {
    const where = [step !== undefined ? `step ${step}` : "", input !== undefined ? `input ${input}` : ""]
      .filter(Boolean)
      .join(", ");
    super(`--input-data ${file}${where ? `, ${where}` : ""}: ${what}`, options);
  }
}

const FORMAT_HINT =
  'perf_analyzer\'s format: {"data": [ {"INPUT0": [values] | {"content": [values], "shape": [d1, d2]} | {"b64": "..."}}, ... ]}, one object per request.';

function flatten(v: unknown): unknown[] {
  return Array.isArray(v) ? v.flatMap(flatten) : [v];
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function parseValue(file: string, step: number, input: string, raw: unknown): DataValue {
  if (Array.isArray(raw)) return { content: flatten(raw) };
  if (!isObject(raw))
    throw new InputDataError(file, step, input, `expected a list of values or an object, got ${JSON.stringify(raw)}`, {
      hint: FORMAT_HINT,
    });
  const out: DataValue = {};
  if ("shape" in raw) {
    const s = raw.shape;
    if (!Array.isArray(s) || s.some((d) => typeof d !== "number" || !Number.isInteger(d) || d < 1)) {
      throw new InputDataError(
        file,
        step,
        input,
        `"shape" must be a list of whole numbers >= 1, got ${JSON.stringify(s)}`,
        { hint: "Give the dimensions without the batch dimension (perf_analyzer adds -b to it)." },
      );
    }
    out.shape = s as number[];
  }
  if (typeof raw.b64 === "string") {
    if (!/^[A-Za-z0-9+/\s]*={0,2}\s*$/.test(raw.b64))
      throw new InputDataError(file, step, input, '"b64" is not base64', { hint: FORMAT_HINT });
    out.b64 = Buffer.from(raw.b64, "base64");
  } else if (Array.isArray(raw.content)) {
    out.content = flatten(raw.content);
  } else {
    throw new InputDataError(file, step, input, 'an object value needs "content" (a list) or "b64" (a string)', {
      hint: FORMAT_HINT,
    });
  }
  return out;
}

/** perf_analyzer's --input-data JSON, checked for its form; the model's own rules come later. */
export function parseInputData(text: string, file: string): DataStep[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new InputDataError(file, undefined, undefined, `not valid JSON: ${(err as Error).message}`, {
      cause: err,
      hint: FORMAT_HINT,
    });
  }
  const data = isObject(json) ? json.data : undefined;
  if (!Array.isArray(data) || data.length === 0)
    throw new InputDataError(file, undefined, undefined, 'must hold {"data": [ ... ]} with at least one step', {
      hint: FORMAT_HINT,
    });
  return data.map((entry, k) => {
    if (!isObject(entry))
      throw new InputDataError(file, k + 1, undefined, "a step must be an object of input names", {
        hint: FORMAT_HINT,
      });
    return new Map(Object.entries(entry).map(([name, raw]) => [name, parseValue(file, k + 1, name, raw)]));
  });
}

export async function readInputData(file: string): Promise<LoadedInputData> {
  let text: string;
  try {
    text = await fsp.readFile(file, "utf8");
  } catch (err) {
    throw new UserError(`cannot read --input-data ${file}: ${(err as Error).message}`, {
      cause: err,
      hint: "Give the path of a JSON file in perf_analyzer's format, or random or zero.",
    });
  }
  return { file, steps: parseInputData(text, file) };
}
