import { expect } from "vitest";
import { TritonHttpClient } from "../../src/triton/http-client.js";

/**
 * What every runtime must serve the same way: the article's ensemble ranks a positive and a
 * negative sentence, and the APIs behind the run's key (model-repository, shared memory, logging,
 * trace) refuse a client without it.
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
  // The other APIs that can read or change the run (server-args.ts RESTRICTED_APIS) are keyed too.
  const base = `http://127.0.0.1:${httpPort}`;
  const json = { "content-type": "application/json" };
  const refused = [
    await fetch(`${base}/v2/systemsharedmemory/status`),
    await fetch(`${base}/v2/systemsharedmemory/region/r/register`, {
      method: "POST",
      headers: json,
      body: JSON.stringify({ key: "/r", offset: 0, byte_size: 64 }),
    }),
    await fetch(`${base}/v2/cudasharedmemory/status`),
    await fetch(`${base}/v2/logging`),
    await fetch(`${base}/v2/trace/setting`),
  ];
  expect(refused.map((r) => r.status)).toEqual([403, 403, 403, 403, 403]);
}
