import { describe, expect, it } from "vitest";
import { OpenVinoReadError, parseOpenVinoXml } from "../../../src/repo/model-io/openvino.js";
import { OPENVINO_XML } from "./conformance-cases.js";

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
