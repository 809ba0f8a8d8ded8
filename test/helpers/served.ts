import { expect } from "vitest";
import { TritonHttpClient } from "../../src/triton/http-client.js";

/**
 * What every runtime must serve the same way: the article's ensemble ranks a positive and a
 * negative sentence, and the model-repository API refuses a client without the run's key.
 */
export async function expectPipelineServedAndLocked(httpPort: number): Promise<void> {
  const client = new TritonHttpClient(`http://127.0.0.1:${httpPort}`, { timeoutMs: 60_000 });
  const r = await client.infer("sentiment_pipeline", [
    {
      name: "RAW_TEXT",
      shape: [2, 1],
      datatype: "BYTES",
      data: ["a wonderful, beautiful film; i loved it", "awful and boring, i hated it"],
    },
  ]);
  const out = r.outputs.find((o) => o.name === "PREDICTIONS")!;
  expect(out.shape).toEqual([2, 2]);
  const [, pp, nn] = out.data as number[];
  expect(pp!).toBeGreaterThan(0.5);
  expect(nn!).toBeGreaterThan(0.5);
  await expect(client.repositoryIndex()).rejects.toThrow(/restricted/);
}
