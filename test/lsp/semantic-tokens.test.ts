import path from "node:path";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { pythonModel, removeTempRepos, tempRepo, writeFiles } from "../repo/helpers.js";
import { LspClient } from "./client.js";

// Semantic tokens through the real server: the legend it announces, and each word of a config
// decoded back from LSP's relative encoding.

const PIPE = `# two steps\r
name: "pipe"
platform: "ensemble"
max_batch_size: 8
input [ { name: "IN" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ -1 ] } ]
dynamic_batching { preserve_ordering: true }
ensemble_scheduling {
  step [
    {
      model_name: "echo" # the step model
      model_version: -1
      input_map { key: "INPUT0" value: "IN" }
      output_map { key: "OUTPUT0" value: "OUT" }
    }
  ]
}
`;

let repo: string;
let client: LspClient;
let legend: string[];

beforeEach(async () => {
  repo = await tempRepo();
  await writeFiles(repo, { ...pythonModel("echo"), "pipe/config.pbtxt": PIPE, "pipe/1/": "" });
  client = LspClient.inProcess({ watch: false, lint: { autoComplete: true } });
  const init = (await client.connection.sendRequest("initialize", {
    processId: process.pid,
    rootUri: client.uri(repo),
    capabilities: {},
  })) as { capabilities: { semanticTokensProvider: { legend: { tokenTypes: string[] }; full: boolean } } };
  await client.connection.sendNotification("initialized", {});
  legend = init.capabilities.semanticTokensProvider.legend.tokenTypes;
  expect(init.capabilities.semanticTokensProvider.full).toBe(true);
});
afterEach(async () => {
  await client.stop();
});
afterAll(removeTempRepos);

describe("semantic tokens", () => {
  it("field names, enum values, strings, numbers, comments, bools and the models steps run", async () => {
    const f = path.join(repo, "pipe", "config.pbtxt");
    await client.open(f, PIPE);
    const { data } = (await client.connection.sendRequest("textDocument/semanticTokens/full", {
      textDocument: { uri: client.uri(f) },
    })) as { data: number[] };
    // Decoded back to (text, type), as the editor does.
    const lines = PIPE.split(/\r?\n/);
    const tokens: Array<[string, string]> = [];
    let line = 0;
    let ch = 0;
    for (let k = 0; k < data.length; k += 5) {
      const [dl, dc, len, type] = data.slice(k, k + 4) as [number, number, number, number];
      line += dl;
      ch = dl === 0 ? ch + dc : dc;
      tokens.push([lines[line]!.slice(ch, ch + len), legend[type]!]);
    }
    const typeOf = (word: string) => tokens.filter(([w]) => w === word).map(([, t]) => t);
    expect(tokens[0]).toEqual(["# two steps", "comment"]);
    expect(typeOf("name")).toEqual(["property", "property", "property"]);
    expect(typeOf('"pipe"')).toEqual(["string"]);
    expect(typeOf("TYPE_FP32")).toEqual(["enumMember", "enumMember"]);
    expect(typeOf("8")).toEqual(["number"]);
    expect(typeOf("-1")).toEqual(["number", "number", "number"]);
    expect(typeOf("true")).toEqual(["keyword"]);
    expect(typeOf('"echo"')).toEqual(["type"]);
    expect(typeOf("# the step model")).toEqual(["comment"]);
    expect(typeOf('"IN"')).toEqual(["string", "string"]);
    expect(typeOf("key")).toEqual(["property", "property"]);
    // Every token of the file is there, nothing twice: the punctuation alone is left out.
    expect(
      tokens
        .map(([w]) => w)
        .join("")
        .replace(/\s/g, ""),
    ).toBe(PIPE.replace(/[\s{}[\]:]/g, ""));
  });
});
