import fs from "node:fs";
import path from "node:path";
import type { DescEnum, DescMessage } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { FIELDS_AFTER_2_51 } from "../../src/repo/backends.js";
import { file_model_config } from "../../src/repo/gen/model_config_pb.js";
import { ROOT } from "./helpers.js";

/** One line per field and enum, in the format of fixtures/triton-2.51-schema.txt. */
function listing(): Map<string, string> {
  const out = new Map<string, string>();
  const enumLine = (e: DescEnum) => e.values.map((v) => `${v.name}=${v.number}`).join(",");
  const visit = (m: DescMessage, prefix: string) => {
    for (const f of m.fields) {
      const type = f.scalar ?? f.message?.typeName ?? f.enum?.typeName ?? "";
      out.set(
        `${prefix}${m.name}.${f.name}`,
        `${f.number}/${f.fieldKind}/${type}/${f.oneof?.name ?? ""}/${f.fieldKind === "map" ? f.mapKey : ""}`,
      );
    }
    for (const n of m.nestedMessages) visit(n, `${prefix}${m.name}.`);
    for (const e of m.nestedEnums) out.set(`${prefix}${m.name}.${e.name}`, enumLine(e));
  };
  for (const m of file_model_config.messages) visit(m, "");
  for (const e of file_model_config.enums) out.set(e.name, enumLine(e));
  return out;
}

describe("the ModelConfig schema", () => {
  it("is Triton 2.51's, field for field, plus the fields added since", () => {
    const fixture = new Map(
      fs
        .readFileSync(path.join(ROOT, "test/repo/fixtures/triton-2.51-schema.txt"), "utf8")
        .split("\n")
        .filter((l) => l && !l.startsWith("#"))
        .map((l) => [l.slice(0, l.indexOf(" ")), l.slice(l.indexOf(" ") + 1)] as const),
    );
    const ours = listing();
    const added = [...ours.keys()].filter((k) => !fixture.has(k)).sort();
    expect(added).toEqual([
      "ModelConfig.model_metrics",
      "ModelEnsembling.max_inflight_responses",
      "ModelMetrics.MetricControl.HistogramOptions.buckets",
      "ModelMetrics.MetricControl.MetricIdentifier.family",
      "ModelMetrics.MetricControl.histogram_options",
      "ModelMetrics.MetricControl.metric_identifier",
      "ModelMetrics.metric_control",
    ]);
    for (const [k, v] of fixture) expect(ours.get(k), k).toBe(v);
    // Lint warns about exactly these top-level additions for the local runtime.
    expect([...FIELDS_AFTER_2_51].sort()).toEqual(["ensemble_scheduling.max_inflight_responses", "model_metrics"]);
  });
});
