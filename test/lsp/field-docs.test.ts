import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../helpers/cli.js";
import { FIELD_DOCS } from "../../src/lsp/gen/field-docs.js";
import { parseProtoDocs } from "../../src/lsp/proto-docs.js";

const PROTO = path.join(ROOT, "src/lsp/proto/model_config.proto");

/** The generated module's text for these docs. */
function moduleText(docs: Record<string, string>): string {
  return [
    "// Generated from src/lsp/proto/model_config.proto by src/lsp/proto-docs.ts; regenerate with",
    "//   npx vitest run --project unit test/lsp/field-docs.test.ts -u",
    "/* eslint-disable */",
    `export const FIELD_DOCS: Readonly<Record<string, string>> = ${JSON.stringify(docs, null, 2)};`,
    "",
  ].join("\n");
}

describe("the documentation hover shows", () => {
  const docs = parseProtoDocs(fs.readFileSync(PROTO, "utf8"));

  it("is the generated module's, read from Triton's model_config.proto", async () => {
    await expect(moduleText(docs)).toMatchFileSnapshot(path.join(ROOT, "src/lsp/gen/field-docs.ts"));
    expect(FIELD_DOCS).toEqual(docs);
  });

  it("names messages, fields, nested fields and enum values, without the manual's markup", () => {
    expect(docs["ModelConfig.max_batch_size"]).toMatch(/^Maximum batch size allowed for inference/);
    expect(docs["ModelInput.dims"]).toMatch(/dimensions\/shape of the input tensor/);
    expect(docs["ModelInstanceGroup.Kind.KIND_GPU"]).toMatch(/GPU/);
    expect(docs["ModelDynamicBatching.max_queue_delay_microseconds"]).toBeDefined();
    expect(docs["ModelEnsembling.Step.input_map"]).toBeDefined();
    expect(docs["ModelVersionPolicy.latest"]).toBeDefined();
    expect(Object.values(docs).some((d) => d.includes("cpp:"))).toBe(false);
  });
});
