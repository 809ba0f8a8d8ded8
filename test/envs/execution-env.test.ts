import { describe, expect, it } from "vitest";
import { isPythonConfig, setsExecutionEnv, withExecutionEnv } from "../../src/envs/execution-env.js";
import { parseModelConfig } from "../../src/repo/parse.js";

const CONFIG = `name: "add_sub"
backend: "python"
parameters: { key: "FOO" value: { string_value: "bar" } }
input [{ name: "X" data_type: TYPE_FP32 dims: [ 1 ] }]
output [{ name: "Y" data_type: TYPE_FP32 dims: [ 1 ] }]
# a trailing comment without a newline`;

describe("the staged config's EXECUTION_ENV_PATH", () => {
  it("is appended as one more parameter that Triton's text format reads, the user's parameters kept", () => {
    const staged = withExecutionEnv(CONFIG, '/home/u/.cache/triton-dev/envs/ab"c');
    expect(staged.startsWith(CONFIG)).toBe(true);
    const parsed = parseModelConfig(staged, "/m/config.pbtxt", { model: "add_sub" });
    expect(parsed.diagnostics.filter((d) => d.severity === "error")).toEqual([]);
    expect(parsed.parsed!.json.parameters).toEqual({
      FOO: { string_value: "bar" },
      EXECUTION_ENV_PATH: { string_value: '/home/u/.cache/triton-dev/envs/ab"c' },
    });
  });

  it("is only for python models, and never replaces one the user set", () => {
    expect(isPythonConfig(CONFIG)).toBe(true);
    expect(isPythonConfig('platform: "onnxruntime_onnx"\n# backend: "python"\n')).toBe(false);
    expect(setsExecutionEnv(CONFIG)).toBe(false);
    expect(setsExecutionEnv(withExecutionEnv(CONFIG, "/e"))).toBe(true);
    expect(setsExecutionEnv('# parameters: { key: "EXECUTION_ENV_PATH" }\n')).toBe(false);
  });

  it("is seen in either of text format's quotes, so a packed environment's requirements.txt is never installed", () => {
    const single = "backend: 'python'\nparameters: { key: 'EXECUTION_ENV_PATH' value: { string_value: '/e' } }\n";
    expect(isPythonConfig(single)).toBe(true);
    expect(setsExecutionEnv(single)).toBe(true);
    expect(setsExecutionEnv(`parameters: { key: 'EXECUTION_ENV_PATH" }`)).toBe(false);
  });
});
