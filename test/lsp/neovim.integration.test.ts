import { execFile, spawnSync } from "node:child_process";
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CLI, copySampleModels, testEnv } from "../helpers/cli.js";

// Neovim as a real editor (headless): the README's setup, then open a config with a typo, see the
// diagnostic, apply its quick fix, complete a field, hover, and jump from an ensemble step to the
// step model's config (test/lsp/nvim/session.lua).

const hasNvim = spawnSync("nvim", ["--version"]).status === 0;
const SESSION = path.join(import.meta.dirname, "nvim", "session.lua");
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await fsp.rm(d, { recursive: true, force: true });
});

interface Step {
  step: string;
  data: any;
}

describe.skipIf(!hasNvim)("triton-dev lsp in Neovim", () => {
  it("a diagnostic on a typo, its quick fix, a completed field, a hover and a jump from an ensemble step", async () => {
    const models = await copySampleModels();
    dirs.push(models);
    const config = path.join(models, "image_classifier", "config.pbtxt");
    const text = await fsp.readFile(config, "utf8");
    await fsp.writeFile(config, text.replace("max_batch_size:", "max_batch_sise:"));
    const transcript = path.join(models, "..", `nvim-${path.basename(models)}.jsonl`);
    dirs.push(transcript);
    const env = await testEnv({
      TRITON_DEV_LSP_CMD: JSON.stringify([process.execPath, CLI, "lsp", "--stdio"]),
      NVIM_CONFIG_FILE: config,
      NVIM_TRANSCRIPT: transcript,
    });
    dirs.push(env.TRITON_DEV_STATE_DIR!);
    const code = await new Promise<number>((resolve) =>
      execFile("nvim", ["--headless", "--clean", "-n", "-c", `luafile ${SESSION}`], { env, timeout: 120_000 }, (err) =>
        resolve(err ? (typeof err.code === "number" ? err.code : 1) : 0),
      ),
    );
    const steps = (await fsp.readFile(transcript, "utf8").catch(() => ""))
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Step);
    const at = (name: string) => steps.find((s) => s.step === name)?.data;
    expect(code, JSON.stringify(steps, null, 2)).toBe(0);

    expect(at("opened").filetype).toBe("pbtxt");
    const [d] = at("diagnostics");
    expect(d).toMatchObject({ lnum: 6, col: 0, code: "config-unknown-field", source: "triton-dev" });
    expect(d.message).toMatch(/^unknown field 'max_batch_sise' in ModelConfig\nhint: Did you mean 'max_batch_size'\?/);
    expect(at("code_action").title).toBe("Change 'max_batch_sise' to 'max_batch_size'");
    expect(at("after_fix").diagnostics).toBe(0);
    expect(at("completion")).toContain("max_queue_delay_microseconds");
    expect(at("completion")).not.toContain("max_batch_size");
    expect(at("completed").line).toBe("  max_queue_delay_microseconds: ");
    expect(at("hover").first_line).toMatch(/^\*\*max_batch_size\*\* `int32`/);
    expect(at("definition")).toEqual({ file: path.join(models, "bert_tokenizer", "config.pbtxt"), line: 4 });
    expect(at("stopped").clients).toBe(0);
  });
});
