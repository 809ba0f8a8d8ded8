import path from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { pythonConfig, pythonModel, removeTempRepos, tempRepo, writeFiles } from "../repo/helpers.js";
import { LspClient } from "./client.js";

// The LSP lifecycle: before `initialize`, requests are refused with ServerNotInitialized and
// notifications dropped (the spec's rule), then everything works as usual.

let repo: string;
let client: LspClient;
const file = (model: string) => path.join(repo, model, "config.pbtxt");

beforeEach(async () => {
  repo = await tempRepo();
  await writeFiles(repo, pythonModel("echo", pythonConfig("echo").replace("max_batch_size", "max_batch_sise")));
  client = LspClient.inProcess({ watch: false, lint: { autoComplete: true } });
});
afterEach(async () => {
  await client.stop();
});
afterAll(removeTempRepos);

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => "answered",
    (err: { code?: number }) => err.code,
  );

describe("before initialize", () => {
  it("requests are refused with ServerNotInitialized (-32002), notifications dropped; after it, all is answered", async () => {
    const f = file("echo");
    const uri = client.uri(f);
    const at = { textDocument: { uri }, position: { line: 0, character: 1 } };
    expect(await codeOf(client.connection.sendRequest("textDocument/hover", at))).toBe(-32002);
    expect(await codeOf(client.connection.sendRequest("textDocument/completion", at))).toBe(-32002);
    expect(await codeOf(client.connection.sendRequest("workspace/noSuchThing", {}))).toBe(-32002);
    // Dropped: the server never hears of this open, so it publishes nothing for it.
    await client.open(f, pythonConfig("echo").replace("max_batch_size", "max_batch_sise"));

    await client.initialize(repo);
    expect(await client.hover(f, 0, 1)).toBeNull();
    expect(client.published.filter((p) => p.uri === uri)).toEqual([]);
    expect(await codeOf(client.connection.sendRequest("workspace/noSuchThing", {}))).toBe(-32601);

    // Opened now, the config is linted as usual.
    await client.close(f);
    await client.open(f, pythonConfig("echo").replace("max_batch_size", "max_batch_sise"));
    const ds = await client.waitForDiagnostics(f, (d) => d.length > 0);
    expect(ds.map((d) => d.code)).toEqual(["config-unknown-field"]);
    // Each publication names the version of the text it is about.
    expect(client.published.filter((p) => p.uri === uri).at(-1)!.version).toBe(1);
    await client.change(f, pythonConfig("echo"));
    await client.waitForDiagnostics(f, (d) => d.length === 0);
    expect(client.published.filter((p) => p.uri === uri).at(-1)!.version).toBe(2);
  });
});
