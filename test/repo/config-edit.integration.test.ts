/**
 * `tune --apply`'s write on the real tritonserver: a config full of comments and odd formatting
 * (CRLF, tabs, `<...>`, a list of blocks, priority queue policies as a block and a list) is edited
 * in the user's repository while `up --detach` serves it. The reload watcher takes the edit as one
 * change (the backup beside it is not served or watched), and Triton's own reading of the edited
 * file, its `/v2/models/offset/config`, says what ours does.
 */
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyConfigEditsToFile, type ConfigEdits } from "../../src/repo/config-edit.js";
import { parseModelConfig } from "../../src/repo/parse.js";
import { freePorts, portArgs, runCli, tempDir, testEnv, type CliResult } from "../helpers/cli.js";
import { OFFSET_MODEL } from "../helpers/offset-model.js";

const ODD = [
  "# offset, written by hand\t# with a tab",
  'name: "offset"   # the folder\'s name',
  "backend: 'python';",
  "max_batch_size: 8 # tune changes this",
  'input [ < name: "X" data_type: TYPE_FP32 dims: [ 4 ] > ]',
  'output [ { name: "Y", data_type: TYPE_FP32, dims: [ 4 ] } ]',
  "dynamic_batching <",
  "\tpreferred_batch_size: 2 # a scalar, then a list",
  "\tpreferred_batch_size: [ 4 ]",
  "\tmax_queue_delay_microseconds: 100",
  "\tpriority_levels: 2",
  "\tdefault_priority_level: 1",
  "\tdefault_queue_policy { timeout_action: DELAY default_timeout_microseconds: 50000 }",
  "\tpriority_queue_policy { key: 1 value: { max_queue_size: 16 } }",
  "\tpriority_queue_policy [ { key: 2, value { max_queue_size: 32 allow_timeout_override: true } } ]",
  ">",
  "instance_group [",
  "\t{",
  "\t\tkind: KIND_CPU # no count: Triton's default is 1",
  "\t}",
  "]",
].join("\r\n");

const EDITS: ConfigEdits = {
  maxBatchSize: 16,
  dynamicBatching: { preferredBatchSize: [4, 8], maxQueueDelayMicroseconds: 500 },
  instanceCounts: [{ kind: "KIND_CPU", count: 2 }],
};

interface TritonConfig {
  max_batch_size: number;
  dynamic_batching?: {
    preferred_batch_size?: number[];
    max_queue_delay_microseconds?: number | string;
    priority_levels?: number | string;
    default_priority_level?: number | string;
    default_queue_policy?: Record<string, unknown>;
    priority_queue_policy?: Record<string, Record<string, unknown>>;
  };
  instance_group: Array<{ count: number; kind: string }>;
}

describe("config-edit on the real tritonserver", () => {
  let env: NodeJS.ProcessEnv;
  let ports: { http: number; grpc: number; metrics: number };
  let models: string;
  let up: CliResult;
  const file = () => path.join(models, "offset", "config.pbtxt");
  const config = async () =>
    (await (await fetch(`http://127.0.0.1:${ports.http}/v2/models/offset/config`)).json()) as TritonConfig;

  beforeAll(async () => {
    env = await testEnv();
    ports = await freePorts();
    models = await tempDir("models");
    await fsp.mkdir(path.join(models, "offset", "1"), { recursive: true });
    await fsp.writeFile(file(), ODD);
    await fsp.writeFile(path.join(models, "offset", "1", "model.py"), OFFSET_MODEL);
    up = await runCli(["up", "--detach", "--timeout", "120", "--models", models, ...portArgs(ports)], env, 200_000);
  }, 240_000);

  afterAll(async () => {
    if (env) await runCli(["down"], env);
  }, 60_000);

  it("serves the edit as Triton reads it, keeping the rest of the file byte for byte", async () => {
    expect(up.code, up.stderr + up.stdout).toBe(0);
    const before = await config();
    expect(before.max_batch_size).toBe(8);
    expect(before.dynamic_batching?.preferred_batch_size).toEqual([2, 4]);

    const r = await applyConfigEditsToFile(file(), EDITS, ODD);
    expect(r.changed).toBe(true);
    const text = await fsp.readFile(file(), "utf8");
    // Only the edited values differ: computed by hand.
    expect(text).toBe(
      ODD.replace("max_batch_size: 8 #", "max_batch_size: 16 #")
        .replace("\tpreferred_batch_size: 2 # a scalar", "\tpreferred_batch_size: [ 4, 8 ] # a scalar")
        .replace("\tpreferred_batch_size: [ 4 ]\r\n", "")
        .replace("max_queue_delay_microseconds: 100", "max_queue_delay_microseconds: 500")
        .replace("\t{\r\n\t\tkind: KIND_CPU", "\t{\r\n\t\tcount: 2\r\n\t\tkind: KIND_CPU"),
    );

    // The watcher reloads it; bounded, as every wait here.
    const deadline = Date.now() + 90_000;
    let served = before;
    while (served.max_batch_size !== 16 && Date.now() < deadline) {
      await new Promise((res) => setTimeout(res, 500));
      served = await config();
    }
    const ours = parseModelConfig(text, file()).parsed!.json;
    expect(served.max_batch_size).toBe(ours.max_batch_size);
    const db = served.dynamic_batching!;
    expect(db.preferred_batch_size).toEqual(ours.dynamic_batching!.preferred_batch_size);
    expect(Number(db.max_queue_delay_microseconds)).toBe(500);
    expect(Number(db.priority_levels)).toBe(2);
    expect(Number(db.default_priority_level)).toBe(1);
    expect(db.default_queue_policy).toMatchObject({ timeout_action: "DELAY" });
    expect(Number(db.default_queue_policy!.default_timeout_microseconds)).toBe(50000);
    expect(Object.keys(db.priority_queue_policy ?? {}).sort()).toEqual(["1", "2"]);
    expect(Number(db.priority_queue_policy!["1"]!.max_queue_size)).toBe(16);
    expect(db.priority_queue_policy!["2"]).toMatchObject({ allow_timeout_override: true });
    expect(served.instance_group.map((g) => [g.count, g.kind])).toEqual([[2, "KIND_CPU"]]);

    // The backup is the user's old bytes, beside the config, and nothing of it is served.
    expect(await fsp.readFile(r.backup!, "utf8")).toBe(ODD);
    const staged: string[] = [];
    const walk = (d: string) => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        if (e.name.includes("triton-dev-backup")) staged.push(path.join(d, e.name));
        if (e.isDirectory()) walk(path.join(d, e.name));
      }
    };
    walk(env.TRITON_DEV_STATE_DIR!);
    expect(staged).toEqual([]);
    const status = await runCli(["status", "--json"], env);
    expect(status.stdout).toContain("offset");
    expect(fs.existsSync(file())).toBe(true);
  }, 150_000);
});
