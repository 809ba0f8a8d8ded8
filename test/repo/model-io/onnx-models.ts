import { execFileSync } from "node:child_process";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { testToolsPython } from "../../helpers/test-tools.js";
import { ROOT } from "../helpers.js";

/**
 * The ONNX models of make-onnx-models.py, written once per test file by the onnx package into a
 * temporary folder: real models, as exporters write them.
 */
export async function makeOnnxModels(): Promise<{
  dir: string;
  file: (name: string) => string;
  remove: () => Promise<void>;
}> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-onnx-"));
  execFileSync(testToolsPython(), [path.join(ROOT, "test/repo/model-io/make-onnx-models.py"), dir], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  return {
    dir,
    file: (name) => path.join(dir, name),
    remove: () => fsp.rm(dir, { recursive: true, force: true }),
  };
}

/** The descriptors of onnx.proto's messages in the onnx package: `Message.field number`, one a line. */
export function onnxPackageFields(messages: readonly string[]): Map<string, number> {
  const script = `
import sys, onnx
for name in sys.argv[1:]:
    m = onnx
    for part in name.split("."):
        m = getattr(m, part)
    for f in m.DESCRIPTOR.fields:
        print(name + "." + f.name, f.number)
`;
  const out = execFileSync(testToolsPython(), ["-c", script, ...messages], { encoding: "utf8" });
  return new Map(
    out
      .trim()
      .split("\n")
      .map((l) => l.split(" ") as [string, string])
      .map(([k, v]) => [k, Number(v)]),
  );
}
