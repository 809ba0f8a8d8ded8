/**
 * Whether unloading a model runs the user's code: the python backend calls `finalize()` on a
 * model's TritonPythonModel when Triton unloads it (its stub checks `hasattr(model, "finalize")`),
 * and nothing else of a model runs then. A stop waits for the unloads that do and need not wait
 * for the others: their processes can be ended, since nothing of the user's is left to run.
 *
 * Told from the staged model.py as text, not by importing it or by Python's `ast`: a stop has a
 * second, and on docker and kind the host may have no Python of ours to ask. The scan removes
 * comments and string literals, then errs towards waiting: any `finalize` left in the code (a
 * `def`, an assignment, an attribute), a string that is exactly "finalize" (`setattr`,
 * `getattr`), `__getattr__`/`__getattribute__` (either can make `hasattr` true), a
 * TritonPythonModel that is not a class of this file, or one with a decorator or a base class
 * that is not a class of this file (an imported base may define finalize) all count as "may run
 * code at unload". Only a name built at run time (`setattr(M, "fin" + "alize", f)`) escapes it.
 */
import fsp from "node:fs/promises";
import path from "node:path";
import { effectiveBackend, ENSEMBLE_PLATFORM } from "./backends.js";
import { parseTree } from "./textproto.js";

/** A model whose unload the stop waits for, and why, as the user reads it. */
export interface UnloadWait {
  model: string;
  why: string;
}

/** Backends written in C++ that run no code of the model's at unload. */
const NATIVE_BACKENDS = new Set([
  "onnxruntime",
  "tensorrt",
  "pytorch",
  "tensorflow",
  "openvino",
  "fil",
  "dali",
  "tensorrtllm",
  "identity",
  "repeat",
  "square",
]);

/** The code of a Python file with comments and string literals blanked (newlines kept), and the strings' contents. */
export function pythonCode(text: string): { code: string; strings: string[] } {
  let code = "";
  const strings: string[] = [];
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i]!;
    if (c === "#") {
      while (i < n && text[i] !== "\n") i++;
      continue;
    }
    if (c === '"' || c === "'") {
      // A backslash keeps the next character in the string, raw strings included (r"\"" is one
      // string); a prefix (r, b, f...) stays in the code as a harmless name.
      const triple = text.startsWith(c.repeat(3), i);
      const q = triple ? c.repeat(3) : c;
      let j = i + q.length;
      let body = "";
      while (j < n && !text.startsWith(q, j)) {
        // An unterminated one-line string ends at the line's end (the file would not import).
        if (!triple && text[j] === "\n") break;
        const step = text[j] === "\\" ? 2 : 1;
        body += text.slice(j, j + step);
        j += step;
      }
      strings.push(body);
      code += `""${body.replace(/[^\n]/g, "")}`;
      i = text.startsWith(q, j) ? j + q.length : j;
      continue;
    }
    code += c;
    i++;
  }
  return { code, strings };
}

/**
 * Why unloading this model.py may run its code (finalize), or undefined when it cannot. Conservative:
 * see the file's comment.
 */
export function finalizeIn(text: string, file = "model.py"): string | undefined {
  const { code, strings } = pythonCode(text);
  const lines = code.split("\n");
  const lineOf = (re: RegExp) => lines.findIndex((l) => re.test(l)) + 1;
  const def = lineOf(/^\s*(async\s+)?def\s+finalize\s*\(/);
  if (def) return `${file}:${def} defines finalize`;
  const named = lineOf(/\bfinalize\b/);
  if (named) return `${file}:${named} names finalize`;
  if (strings.some((s) => s.trim() === "finalize")) return `${file} names finalize in a string`;
  const dynamic = lineOf(/\b__getattr(ibute)?__\b/);
  if (dynamic) return `${file}:${dynamic} defines __getattr__, which may answer for finalize`;
  const at = lines.findIndex((l) => /^class\s+TritonPythonModel\b/.test(l));
  if (at < 0) return `${file} does not define TritonPythonModel as a class of its own (it may come with a finalize)`;
  if (
    at > 0 &&
    /^\s*@/.test(
      lines
        .slice(0, at)
        .filter((l) => l.trim())
        .at(-1) ?? "",
    )
  )
    return `${file}:${at + 1} decorates TritonPythonModel, which may add a finalize`;
  // The bases, up to the colon that ends the class line (possibly over several lines).
  const header = /^class\s+TritonPythonModel\s*(\(([^)]*)\))?\s*:/.exec(lines.slice(at, at + 20).join(" "));
  const bases = (header?.[2] ?? "")
    .split(",")
    .map((b) => b.trim())
    .filter(Boolean);
  const local = new Set(lines.map((l) => /^class\s+(\w+)/.exec(l)?.[1]).filter((x): x is string => !!x));
  const foreign = bases.filter((b) => b !== "object" && !local.has(b));
  if (foreign.length)
    return `${file}:${at + 1} TritonPythonModel inherits from ${foreign.join(", ")}, which may define finalize`;
  return undefined;
}

/**
 * The config's top-level string fields (backend, platform, default_model_filename), read with the
 * schema-free text-format parser: a stop cannot spend the half second the full parser's protobuf
 * code takes to load. Undefined when the text is not text format (Triton would not have loaded it).
 */
function topLevelStrings(text: string): Record<string, string> | undefined {
  let root;
  try {
    root = parseTree(text).root;
  } catch {
    return undefined;
  }
  const out: Record<string, string> = {};
  for (const f of root.fields)
    if (f.value.kind === "scalar" && f.value.token.type === "string") out[f.name] = f.value.token.value;
  return out;
}

/** What Triton sees of a staged model: its config's backend and model file. */
async function modelFile(dir: string, version: string): Promise<{ backend: string; file?: string } | string> {
  const configFile = path.join(dir, "config.pbtxt");
  let text: string;
  try {
    text = await fsp.readFile(configFile, "utf8");
  } catch {
    text = "";
  }
  const fields = topLevelStrings(text);
  if (!fields) return "its config.pbtxt could not be read";
  const { platform = "", backend = "", default_model_filename: defaultModelFilename = "" } = fields;
  if (platform === ENSEMBLE_PLATFORM) return { backend: "ensemble" };
  const chosen = effectiveBackend(platform, backend);
  const name = defaultModelFilename || "model.py";
  const file = path.join(dir, version, name);
  if (chosen) return { backend: chosen, file };
  // No backend named: Triton's auto-complete takes a model.py for the python backend.
  const exists = await fsp.stat(file).then(
    (s) => s.isFile(),
    () => false,
  );
  return exists && name.endsWith(".py")
    ? { backend: "python", file }
    : "neither its config nor a model.py says its backend";
}

/**
 * Of the model versions loaded in the staged repository `repository`, those whose unload runs the
 * user's code, with why. Anything this cannot tell (a file it cannot read, a backend it does not
 * know) is answered "wait", as Triton would be waited for without it.
 */
export async function unloadsRunningCode(
  repository: string,
  loaded: ReadonlyArray<{ name: string; version?: string }>,
): Promise<UnloadWait[]> {
  const out: UnloadWait[] = [];
  const seen = new Set<string>();
  for (const m of loaded) {
    if (seen.has(m.name)) continue;
    const why = await whyWait(path.join(repository, m.name), m.version ?? "1");
    if (why) {
      seen.add(m.name);
      out.push({ model: m.name, why });
    }
  }
  return out;
}

async function whyWait(dir: string, version: string): Promise<string | undefined> {
  const found = await modelFile(dir, version);
  if (typeof found === "string") return found;
  if (found.backend === "ensemble" || NATIVE_BACKENDS.has(found.backend)) return undefined;
  if (found.backend !== "python") return `its backend ${found.backend} may run code when it unloads`;
  let text: string;
  try {
    text = await fsp.readFile(found.file!, "utf8");
  } catch {
    return `${path.basename(found.file!)} could not be read`;
  }
  return finalizeIn(text, `${version}/${path.basename(found.file!)}`);
}
