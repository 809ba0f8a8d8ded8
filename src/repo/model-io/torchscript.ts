import fsp from "node:fs/promises";
import { retryFdLimit } from "../fd-limit.js";
import path from "node:path";
import zlib from "node:zlib";
import type { ModelContext, Reporter } from "../rules.js";

/**
 * What can be known of a TorchScript archive without libtorch: a TorchScript file records no
 * tensor types or shapes, only its code, so lint checks the pytorch backend's naming rules
 * (libtorch backend, "Model configuration"): every output is named `<name>__<index>`; inputs are
 * named either `<name>__<index>` or after the arguments of the module's `forward`, which the
 * archive's code (`<archive>/code/__torch__*.py`, read from the zip's central directory) gives.
 * The backend completes nothing, so config.pbtxt must list at least one input and one output.
 * Data types and dims are not checked, and a warning says so.
 */

const INDEXED = /^.+__\d+$/;

/** A zip's central directory and the code entries read from it are small; an archive's weights are not read. */
const MAX_CODE_BYTES = 4 * 1024 * 1024;
const MAX_ENTRIES = 100_000;

/** The argument names of every `def forward(self, ...)` in the archive's code; undefined when it cannot be read. */
export async function torchScriptForwardArgs(file: string): Promise<string[][] | undefined> {
  let fh: fsp.FileHandle;
  try {
    fh = await retryFdLimit(() => fsp.open(file, "r"));
  } catch {
    return undefined;
  }
  try {
    const size = (await fh.stat()).size;
    const tailLen = Math.min(size, 65_557);
    const tail = Buffer.alloc(tailLen);
    await fh.read(tail, 0, tailLen, size - tailLen);
    const eocd = tail.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
    if (eocd < 0 || eocd + 22 > tailLen) return undefined;
    let count = tail.readUInt16LE(eocd + 10);
    let cdSize = tail.readUInt32LE(eocd + 12);
    let cdOffset = tail.readUInt32LE(eocd + 16);
    // torch.jit.save writes zip64 archives; the zip64 end record holds the real figures.
    const loc = eocd - 20;
    if ((cdOffset === 0xffffffff || count === 0xffff) && loc >= 0 && tail.readUInt32LE(loc) === 0x07064b50) {
      const rec = Number(tail.readBigUInt64LE(loc + 8));
      const z = Buffer.alloc(56);
      await fh.read(z, 0, 56, rec);
      if (z.readUInt32LE(0) !== 0x06064b50) return undefined;
      count = Number(z.readBigUInt64LE(32));
      cdSize = Number(z.readBigUInt64LE(40));
      cdOffset = Number(z.readBigUInt64LE(48));
    }
    if (count > MAX_ENTRIES || cdSize > MAX_CODE_BYTES || cdOffset + cdSize > size) return undefined;
    const cd = Buffer.alloc(cdSize);
    await fh.read(cd, 0, cdSize, cdOffset);
    const found: string[][] = [];
    let budget = MAX_CODE_BYTES;
    for (let p = 0, i = 0; i < count && p + 46 <= cd.length; i++) {
      if (cd.readUInt32LE(p) !== 0x02014b50) return undefined;
      const method = cd.readUInt16LE(p + 10);
      const csize = cd.readUInt32LE(p + 20);
      const nameLen = cd.readUInt16LE(p + 28);
      const extraLen = cd.readUInt16LE(p + 30);
      const commentLen = cd.readUInt16LE(p + 32);
      const local = cd.readUInt32LE(p + 42);
      const name = cd.toString("utf8", p + 46, p + 46 + nameLen);
      p += 46 + nameLen + extraLen + commentLen;
      if (!/(^|\/)code\/__torch__(\/.*)?\.py$/.test(name) || csize > budget || csize === 0xffffffff) continue;
      budget -= csize;
      const head = Buffer.alloc(30);
      await fh.read(head, 0, 30, local);
      if (head.readUInt32LE(0) !== 0x04034b50) continue;
      const start = local + 30 + head.readUInt16LE(26) + head.readUInt16LE(28);
      const raw = Buffer.alloc(csize);
      await fh.read(raw, 0, csize, start);
      let code: string;
      try {
        code = (method === 8 ? zlib.inflateRawSync(raw, { maxOutputLength: MAX_CODE_BYTES }) : raw).toString("utf8");
      } catch {
        continue;
      }
      // TorchScript writes `def forward(self: __torch__.Net,\n    x: Tensor, y: Optional[Tensor]) -> Tensor:`.
      for (const m of code.matchAll(/def forward\(\s*self\b[^,)]*(?:,([^)]*))?\)/g)) {
        let args = m[1] ?? "";
        // Type arguments hold commas of their own (Tuple[Tensor, Tensor]).
        for (let i = 0; i < 8 && /\[[^[\]]*\]/.test(args); i++) args = args.replace(/\[[^[\]]*\]/g, "");
        found.push(
          args
            .split(",")
            .map((a) => a.split(":")[0]!.split("=")[0]!.trim())
            .filter((a) => a && !a.startsWith("*")),
        );
      }
    }
    return found;
  } catch {
    return undefined;
  } finally {
    await fh.close();
  }
}

export async function checkTorchScriptNames(ctx: ModelContext, r: Reporter, versionDir: string): Promise<void> {
  const c = ctx.parsed.config;
  const fileName = ctx.autofill.defaultModelFilename || "model.pt";
  const file = path.join(versionDir, fileName);
  const rel = path.relative(path.dirname(ctx.layout.dir), file);
  if (c.input.length === 0 || c.output.length === 0) {
    r.error(
      "torchscript-io-missing",
      c.input.length === 0 ? undefined : "output",
      `config.pbtxt lists no ${c.input.length === 0 ? "inputs" : "outputs"}: the pytorch backend cannot complete them, since ${rel} records no tensor names or types`,
      `Add ${c.input.length === 0 ? 'input [ { name: "INPUT__0"' : 'output [ { name: "OUTPUT__0"'} data_type: TYPE_FP32 dims: [ -1 ] } ] (<name>__<index>, index in forward's order).`,
    );
  }
  c.output.forEach((o, i) => {
    if (o.name && !INDEXED.test(o.name))
      r.error(
        "torchscript-output-name",
        `output[${i}].name#value`,
        `output '${o.name}' does not follow the pytorch backend's <name>__<index> naming (Triton: "output '${o.name}' does not follow <name>__<index> naming convention")`,
        `Rename it to '${o.name}__${i}': the index is the position of the tensor in what forward returns.`,
      );
  });
  const unindexed = c.input.filter((x) => x.name && !INDEXED.test(x.name));
  if (unindexed.length > 0) {
    const forwards = await torchScriptForwardArgs(file);
    const matches = forwards?.some((args) => unindexed.every((x) => args.includes(x.name)));
    if (!matches) {
      const args = forwards?.[0];
      r.report(
        forwards ? "error" : "warning",
        "torchscript-input-name",
        `input[${c.input.indexOf(unindexed[0]!)}].name#value`,
        forwards
          ? `input '${unindexed[0]!.name}' is neither <name>__<index> nor an argument of forward in ${rel}${args ? ` (its arguments: ${args.join(", ") || "none"})` : ""}`
          : `input '${unindexed[0]!.name}' is not <name>__<index>, and the forward arguments of ${rel} could not be read to check it`,
        `Name inputs INPUT__0, INPUT__1, ... in forward's order${args?.length ? `, or after forward's arguments (${args.join(", ")})` : ""}.`,
      );
    }
  }
  r.warning(
    "model-file-not-checked",
    undefined,
    `the data types and dims of config.pbtxt are not checked against ${rel}: a TorchScript file records no tensor types or shapes`,
    "Triton checks them only when requests run; send one with `triton-dev perf` or a client to see.",
  );
}
