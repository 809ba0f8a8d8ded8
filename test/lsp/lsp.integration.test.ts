import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CLI, copySampleModels, testEnv } from "../helpers/cli.js";
import { LspClient, messageText, positionOf } from "./client.js";

// `triton-dev lsp` as an editor starts it: the built CLI, the protocol over its stdin and stdout.

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await fsp.rm(d, { recursive: true, force: true });
});

describe("triton-dev lsp over stdio", () => {
  it("answers a sample config typed broken character by character, then fixed, and exits when asked", async () => {
    const models = await copySampleModels();
    dirs.push(models);
    const env = await testEnv();
    dirs.push(env.TRITON_DEV_STATE_DIR!);
    const client = LspClient.spawn(process.execPath, [CLI, "lsp", "--stdio"], env);
    try {
      await client.initialize(models);
      const f = path.join(models, "image_classifier", "config.pbtxt");
      const saved = await fsp.readFile(f, "utf8");
      await client.open(f, saved);
      await client.waitForDiagnostics(f, (ds) => ds.length === 0, 60_000);

      await client.typeAtEnd(f, "\ninstance_group [ { kind: KIND_CPUU } ]");
      let ds = await client.waitForDiagnostics(f, (d) => d.some((x) => /KIND_CPUU/.test(messageText(x))));
      expect(ds.map((d) => d.code)).toEqual(["config-enum"]);
      expect(ds[0]!.source).toBe("triton-dev");
      expect(ds[0]!.range.start).toEqual(positionOf(client.textOf(f)!, "KIND_CPUU"));
      expect(ds[0]!.message).toMatch(/hint: Did you mean KIND_CPU\?/);

      // Backspace the extra U: the finding clears.
      await client.change(f, client.textOf(f)!.replace("KIND_CPUU", "KIND_CPU"));
      ds = await client.waitForDiagnostics(f, (d) => d.length === 0);
      expect(ds).toEqual([]);
      // Nothing was written to the file.
      expect(await fsp.readFile(f, "utf8")).toBe(saved);
    } finally {
      expect(await client.stop()).toBe(0);
    }
  });
});
