import { describe, expect, it } from "vitest";
import { UsageError } from "../../src/errors.js";
import { generateBodies } from "../../src/perf/generate-stream.js";
import { parseRequestParameter } from "../../src/perf/inputs.js";
import { perfAnalyzerArgs } from "../../src/perf/perf-analyzer.js";
import { probeHint } from "../../src/perf/run.js";
import { encodeTensorData } from "../../src/triton/binary.js";

describe("--request-parameter NAME:VALUE:TYPE (perf_analyzer's flag)", () => {
  it("parses string, int and bool values, a string value holding colons included", () => {
    expect(parseRequestParameter("max_tokens:256:int")).toEqual(["max_tokens", 256]);
    expect(parseRequestParameter("ignore_eos:true:bool")).toEqual(["ignore_eos", true]);
    expect(parseRequestParameter("stop:a:b:string")).toEqual(["stop", "a:b"]);
    expect(parseRequestParameter("n:-3:int")).toEqual(["n", -3]);
    // A string stays a string, even when it reads as a number.
    expect(parseRequestParameter("seed:42:string")).toEqual(["seed", "42"]);
  });

  it("refuses what perf_analyzer would not take, and the parameters perf sets itself, saying what to write", () => {
    for (const bad of ["max_tokens:256", "max_tokens", ":1:int", "n:1.5:int", "b:yes:bool", "x:1:double"])
      expect(() => parseRequestParameter(bad), bad).toThrow(UsageError);
    expect(() => parseRequestParameter("n:1.5:int")).toThrow(/'1.5' is not a whole number/);
    expect(() => parseRequestParameter("priority:1:int")).toThrow(/a parameter perf sets itself/);
    expect(() => parseRequestParameter("sequence_id:1:int")).toThrow(UsageError);
  });

  it("goes to perf_analyzer as its own flag, and into generate_stream's parameters object", () => {
    const args = perfAnalyzerArgs(
      {
        model: "m",
        url: "127.0.0.1:1",
        protocol: "http",
        kind: "concurrency",
        value: 1,
        distribution: "constant",
        windowMs: 1000,
        stabilityPct: 10,
        maxTrials: 3,
        batchSize: 1,
        shapes: {},
        inputData: "random",
        stringLength: 8,
        requestParameters: { max_tokens: 4, ignore_eos: true, mode: "greedy" },
      },
      "/tmp/x.csv",
    );
    const flags = args.flatMap((a, i) => (a === "--request-parameter" ? [args[i + 1]] : []));
    expect(flags).toEqual(["max_tokens:4:int", "ignore_eos:true:bool", "mode:greedy:string"]);
    const bodies = generateBodies(
      {
        name: "m",
        versions: [],
        platform: "",
        inputs: [{ name: "IN", datatype: "INT32", shape: [1] }],
        outputs: [{ name: "OUT", datatype: "INT32", shape: [1] }],
      },
      { name: "m", platform: "", backend: "python", max_batch_size: 0, instance_group: [] },
      [[{ name: "IN", datatype: "INT32", shape: [1], data: encodeTensorData("INT32", [3]) }]],
      { max_tokens: 4 },
    );
    expect(bodies!.map((b) => JSON.parse(b))).toEqual([{ IN: 3, parameters: { max_tokens: 4 } }]);
  });
});

describe("the hint for a first request that failed", () => {
  it("does not blame the inputs for a KeyError on a name that is no input: it names --request-parameter", () => {
    const msg = "Triton answered: Failed to process the request(s) for model 'params', message: KeyError: 'max_tokens'";
    expect(probeHint(msg, ["INPUT_IDS"])).toMatch(/--request-parameter max_tokens:VALUE:TYPE/);
    expect(probeHint(msg, ["INPUT_IDS"])).not.toMatch(/--input-data|--shape/);
    // A KeyError on an input's own name is about the inputs.
    expect(probeHint("KeyError: 'INPUT_IDS'", ["INPUT_IDS"])).toMatch(/--input-data/);
    expect(probeHint("shape mismatch", ["INPUT_IDS"])).toMatch(/--input-data/);
  });
});

describe("the hint for a stateful model's first request refused", () => {
  it("names the sequence flags, not the inputs, when the model refuses them", () => {
    const msg = "Triton answered 500: sequence 1 was not started: its first request needs flags == START";
    expect(probeHint(msg, ["VALUE"], true)).toMatch(/refused the request's sequence flags, not its inputs/);
    expect(probeHint(msg, ["VALUE"], true)).not.toMatch(/--input-data/);
    // A model that is not stateful, or a message about one of its inputs, keeps the inputs' hint.
    expect(probeHint(msg, ["VALUE"], false)).toMatch(/--input-data/);
    expect(probeHint("unexpected shape for input 'VALUE' of the sequence", ["VALUE"], true)).toMatch(/--input-data/);
  });
});
