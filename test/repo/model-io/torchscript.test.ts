import zlib from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";
import { lintRepository } from "../../../src/repo/lint.js";
import { torchScriptForwardArgs } from "../../../src/repo/model-io/torchscript.js";
import { removeTempRepos, tempRepo, writeFiles } from "../helpers.js";

afterAll(removeTempRepos);

/** A zip as torch.jit.save lays it out (archive/code/__torch__.py beside data.pkl), entries deflated or stored. */
function zip(entries: Record<string, string>, deflate: boolean): Uint8Array {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, text] of Object.entries(entries)) {
    const raw = Buffer.from(text);
    const data = deflate ? zlib.deflateRawSync(raw) : raw;
    const n = Buffer.from(name);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(deflate ? 8 : 0, 8);
    local.writeUInt32LE(zlib.crc32(raw), 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(raw.length, 22);
    local.writeUInt16LE(n.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(deflate ? 8 : 0, 10);
    central.writeUInt32LE(zlib.crc32(raw), 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(raw.length, 24);
    central.writeUInt16LE(n.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, n, data);
    centrals.push(central, n);
    offset += 30 + n.length + data.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Object.keys(entries).length, 8);
  end.writeUInt16LE(Object.keys(entries).length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

const CODE = `class Net(Module):
  __parameters__ = []
  def forward(self: __torch__.Net,
    input_ids: Tensor,
    attention_mask: Optional[Tuple[Tensor, Tensor]]) -> Tensor:
    return torch.add(input_ids, attention_mask)
`;
const archive = (deflate: boolean) =>
  zip({ "net/data.pkl": "\x80\x02", "net/code/__torch__.py": CODE, "net/version": "3\n" }, deflate);

describe("TorchScript archives", () => {
  it("gives the arguments of forward from the archive's code, stored or deflated", async () => {
    for (const deflate of [false, true]) {
      const repo = await tempRepo();
      await writeFiles(repo, { "model.pt": archive(deflate) });
      expect(await torchScriptForwardArgs(`${repo}/model.pt`)).toEqual([["input_ids", "attention_mask"]]);
    }
  });

  it("accepts inputs named after forward's arguments, and names the arguments when one is not", async () => {
    const cfg = (names: string[]) =>
      `name: "m"\nplatform: "pytorch_libtorch"\nmax_batch_size: 8\ninput [ ${names
        .map((n) => `{ name: "${n}" data_type: TYPE_INT64 dims: [ -1 ] }`)
        .join(", ")} ]\noutput [ { name: "OUTPUT__0" data_type: TYPE_INT64 dims: [ -1 ] } ]\n`;
    const lint = async (names: string[]) => {
      const repo = await tempRepo();
      await writeFiles(repo, { "m/config.pbtxt": cfg(names), "m/1/model.pt": archive(true) });
      return (await lintRepository(repo)).models[0]!.diagnostics;
    };
    const ok = await lint(["input_ids", "attention_mask"]);
    expect(ok.filter((d) => d.severity === "error")).toEqual([]);
    expect(ok.map((d) => d.code)).toContain("model-file-not-checked");
    const bad = (await lint(["input_ids", "mask"])).find((d) => d.code === "torchscript-input-name")!;
    expect(bad.severity).toBe("error");
    expect(bad.message).toContain("(its arguments: input_ids, attention_mask)");
  });

  it("refuses a config that lists no inputs or no outputs: the pytorch backend completes neither", async () => {
    const repo = await tempRepo();
    await writeFiles(repo, {
      "m/config.pbtxt": `name: "m"\nplatform: "pytorch_libtorch"\nmax_batch_size: 8\ninput [ { name: "input_ids" data_type: TYPE_INT64 dims: [ -1 ] } ]\n`,
      "m/1/model.pt": archive(true),
    });
    const m = (await lintRepository(repo)).models[0]!;
    const missing = m.diagnostics.filter((d) => d.code === "torchscript-io-missing");
    expect(missing.map((d) => d.severity)).toEqual(["error"]);
    expect(missing[0]!.message).toContain("no outputs");
    expect(m.wouldLoad).toBe(false);
  });
});
