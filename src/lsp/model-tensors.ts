import fsp from "node:fs/promises";
import path from "node:path";
import { autofillBackendFields } from "../repo/autofill.js";
import type { ModelLayout } from "../repo/layout.js";
import { type ModelTensor, readOnnxModel } from "../repo/model-io/onnx.js";
import { readOpenVinoModel } from "../repo/model-io/openvino.js";
import type { ModelConfig } from "../repo/gen/model_config_pb.js";

/** A model file's inputs and outputs as the file declares them. */
export interface FileTensors {
  /** The model file read. */
  file: string;
  inputs: ModelTensor[];
  outputs: ModelTensor[];
}

/**
 * Reads the inputs and outputs of a model's file (ONNX, OpenVINO IR) for completion and hover, the
 * newest version's file, kept until the file changes (its size or time).
 */
export class ModelTensorReader {
  private readonly cache = new Map<string, { stamp: string; tensors: FileTensors | undefined }>();

  async read(
    layout: ModelLayout,
    config: Pick<ModelConfig, "platform" | "backend" | "defaultModelFilename"> | undefined,
  ): Promise<FileTensors | undefined> {
    const fields = config ?? { platform: "", backend: "", defaultModelFilename: "" };
    const af = autofillBackendFields(layout.name, fields, layout);
    if (af.backend !== "onnxruntime" && af.backend !== "openvino") return undefined;
    const fileName = af.defaultModelFilename || (af.backend === "onnxruntime" ? "model.onnx" : "model.xml");
    const version = [...layout.versions].reverse().find((v) => v.entries.get(fileName)?.isDir === false);
    if (!version) return undefined;
    const file = path.join(version.dir, fileName);
    let stamp: string;
    try {
      const st = await fsp.stat(file);
      stamp = `${st.size}:${st.mtimeMs}`;
    } catch {
      return undefined;
    }
    const known = this.cache.get(file);
    if (known?.stamp === stamp) return known.tensors;
    let tensors: FileTensors | undefined;
    try {
      const t = af.backend === "onnxruntime" ? await readOnnxModel(file) : await readOpenVinoModel(file);
      tensors = { file, inputs: t.inputs, outputs: t.outputs };
    } catch {
      // Lint says what is wrong with the file; completion just has nothing from it.
      tensors = undefined;
    }
    this.cache.set(file, { stamp, tensors });
    return tensors;
  }
}

/** `FP32 [-1,3,224,224]`, as a hover or completion detail says it. */
export function describeTensor(t: ModelTensor): string {
  const dims = t.dims ? `[${t.dims.join(", ")}]` : "(no shape given)";
  return `${t.dataType ?? t.fileType} ${dims}`;
}
