import fs from "node:fs";
import path from "node:path";
import { ROOT } from "./cli.js";

/**
 * The tests' own Python with tritonclient and onnx (`.ci/run` creates it), kept apart from the
 * managed environment so nothing the tests need changes what Triton's stub runs with.
 */
export function testToolsPython(env: NodeJS.ProcessEnv = process.env): string {
  const root = env.TRITON_DEV_TEST_TOOLS ?? path.join(ROOT, ".triton-dev", "test-tools");
  const python = path.join(root, "bin", "python");
  if (!fs.existsSync(python))
    throw new Error(
      `no test tools at ${root}: run .ci/run once, or create it with ` +
        `python3 -m venv ${root} && ${root}/bin/pip install 'tritonclient[http,grpc]' onnx`,
    );
  return python;
}
