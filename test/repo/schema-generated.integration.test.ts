import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./helpers.js";

// Runs buf's code generator (a few seconds of CPU), so it is an integration test: the unit
// project stays quick.
describe("the generated config schema (src/repo/gen/model_config_pb.ts)", () => {
  const buf = path.join(ROOT, "node_modules/.bin/buf");
  it.skipIf(!fs.existsSync(buf))("matches its generated code (rerun buf generate after editing the .proto)", () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "triton-dev-buf-"));
    execFileSync(buf, ["generate", "src/repo/proto", "--template", "src/repo/proto/buf.gen.yaml", "-o", out], {
      cwd: ROOT,
      env: {
        ...process.env,
        PATH: `${path.join(ROOT, "node_modules/.bin")}${path.delimiter}${process.env.PATH ?? ""}`,
      },
    });
    const fresh = fs.readFileSync(path.join(out, "src/repo/gen/model_config_pb.ts"), "utf8");
    fs.rmSync(out, { recursive: true, force: true });
    expect(
      fresh === fs.readFileSync(path.join(ROOT, "src/repo/gen/model_config_pb.ts"), "utf8"),
      "src/repo/gen/model_config_pb.ts is stale",
    ).toBe(true);
  });
});
