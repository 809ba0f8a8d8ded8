import { afterAll, describe, expect, it } from "vitest";
import { lintRepository } from "../../../src/repo/lint.js";
import { OpenVinoReadError, parseOpenVinoXml } from "../../../src/repo/model-io/openvino.js";
import { removeTempRepos, tempRepo, writeFiles } from "../helpers.js";
import { OPENVINO_XML } from "./conformance-cases.js";

afterAll(removeTempRepos);

const brief = (ts: ReadonlyArray<{ name: string; dataType?: string; fileType: string; dims?: number[] }>) =>
  ts.map((t) => `${t.name} ${t.dataType ?? t.fileType} ${t.dims ? `[${t.dims.join(",")}]` : "(no shape)"}`);

describe("parseOpenVinoXml", () => {
  it("takes inputs from Parameter layers and outputs from the ports that feed Result layers", () => {
    const { inputs, outputs } = parseOpenVinoXml(OPENVINO_XML);
    expect(brief(inputs)).toEqual(["INPUT0 TYPE_FP32 [-1,4]"]);
    expect(brief(outputs)).toEqual(["OUTPUT0 TYPE_FP32 [-1,4]"]);
  });

  it("names a port without tensor names by its layer, reads ? and ranges as variable, and maps element types", () => {
    const xml = OPENVINO_XML.replace(' names="INPUT0"', "")
      .replace('element_type="f32"', 'element_type="i64"')
      .replace(
        "<dim>-1</dim><dim>4</dim></port>\n      </output>",
        "<dim>?</dim><dim>1..8</dim></port>\n      </output>",
      )
      .replace('precision="FP32" names="OUTPUT0"', 'precision="FP16" names="probs,OUTPUT0"');
    const { inputs, outputs } = parseOpenVinoXml(xml);
    expect(brief(inputs)).toEqual(["INPUT0 TYPE_INT64 [-1,-1]"]);
    expect(brief(outputs)).toEqual(["probs TYPE_FP16 [-1,4]"]);
  });

  it("refuses text that is not an IR", () => {
    expect(() => parseOpenVinoXml("<html></html>", "/m/1/model.xml")).toThrow(OpenVinoReadError);
  });
});

describe("an OpenVINO IR in lint", () => {
  const IO = `input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
`;
  async function lintIr(xml: string, io = IO) {
    const repo = await tempRepo();
    await writeFiles(repo, {
      "m/config.pbtxt": `backend: "openvino"\nmax_batch_size: 8\n${io}`,
      "m/1/model.xml": xml,
      "m/1/model.bin": "",
    });
    return (await lintRepository(repo)).models[0]!;
  }

  it("refuses an IR OpenVINO cannot read, on the file", async () => {
    const m = await lintIr("<html></html>");
    const found = m.diagnostics.filter((d) => d.code === "openvino-invalid");
    expect(found.map((d) => [d.severity, d.file.endsWith("/m/1/model.xml")])).toEqual([["error", true]]);
    expect(found[0]!.message).toMatch(/^m\/1\/model\.xml cannot be read: /);
    expect(m.wouldLoad).toBe(false);
  });

  it("warns of an IR that declares no outputs (no Result layer)", async () => {
    const m = await lintIr(OPENVINO_XML.replace('type="Result"', 'type="Relu"'));
    const empty = m.diagnostics.filter((d) => d.code === "model-io-empty");
    expect(empty.map((d) => [d.severity, d.message])).toEqual([
      ["warning", expect.stringContaining("declares no outputs")],
    ]);
  });

  it("names the IR's input the config does not list, beside the listed one the IR does not have", async () => {
    const m = await lintIr(OPENVINO_XML, IO.replace('name: "INPUT0"', 'name: "input"'));
    expect(m.diagnostics.map((d) => [d.code, d.severity])).toEqual(
      expect.arrayContaining([
        ["model-io-unknown", "error"],
        ["model-io-missing", "warning"],
      ]),
    );
    expect(m.diagnostics.find((d) => d.code === "model-io-missing")!.message).toContain("has input 'INPUT0'");
  });
});
