import { execFile, spawnSync } from "node:child_process";
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CLI, copySampleModels, testEnv } from "../helpers/cli.js";

// Neovim as a real editor (headless): the README's setup, then open a config with a typo, see the
// diagnostic, apply its quick fix, complete a field, hover, and jump from an ensemble step to the
// step model's config; then navigation as 0.7's own commands give it: the outline, a tensor's
// hover, references, renaming a tensor and a model, workspace symbols, folding and semantic tokens
// (test/lsp/nvim/session.lua).

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
  it("a diagnostic on a typo, its quick fix, a completed field, a hover, a jump from an ensemble step, and navigation", async () => {
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

    // The outline in the quickfix list, as :lua vim.lsp.buf.document_symbol() fills it.
    const outline = at("document_symbols").map((i: { text: string; lnum: number }) => `${i.lnum} ${i.text}`);
    expect(outline.slice(0, 2)).toEqual(["5 [Module] sentiment_pipeline", "5 [Field] name"]);
    expect(outline).toContain("11 [Variable] RAW_TEXT");
    expect(outline).toContain("28 [Function] step 1: bert_tokenizer");
    expect(outline).toContain("46 [Function] step 2: sentiment_classifier");
    expect(outline).toContain("31 [Variable] TEXT_INPUT");
    // K on an input_map key: the step model's declaration and the steps that use it.
    expect(at("hover_tensor").text).toBe(
      "**TEXT_INPUT**: input of `bert_tokenizer`, `TYPE_STRING` `[1]`\n\nUsed by:\n- `bert_pipeline` step 1 runs `bert_tokenizer`: input_map `TEXT_INPUT` ← `RAW_TEXT`\n- `sentiment_pipeline` step 1 runs `bert_tokenizer`: input_map `TEXT_INPUT` ← `RAW_TEXT`",
    );
    // References in the quickfix list: the declaration and the ensemble's map; a model's name and its step.
    const refs = (step: string) =>
      at(step).map(
        (i: { file: string; lnum: number; col: number; text: string }) =>
          `${i.file}:${i.lnum}:${i.col} ${i.text.trim()}`,
      );
    expect(refs("references_tensor")).toEqual([
      'bert_pipeline/config.pbtxt:31:15 key: "TEXT_INPUT"',
      'bert_tokenizer/config.pbtxt:10:12 name: "TEXT_INPUT"',
      'sentiment_pipeline/config.pbtxt:31:15 key: "TEXT_INPUT"',
    ]);
    expect(refs("references_model")).toEqual([
      'bert_pipeline/config.pbtxt:28:20 model_name: "bert_tokenizer"',
      'bert_tokenizer/config.pbtxt:4:8 name: "bert_tokenizer"',
      'sentiment_pipeline/config.pbtxt:28:20 model_name: "bert_tokenizer"',
    ]);
    // vim.lsp.buf.rename on the tensor: both configs changed, saved, and the ensemble stays clean.
    const renamed = at("rename_tensor");
    expect(renamed.tokenizer).toEqual(['    name: "TEXT"']);
    expect(renamed.pipeline).toContain('        key: "TEXT"');
    expect(renamed.diagnostics).toBe(0);
    expect(await fsp.readFile(path.join(models, "bert_tokenizer", "config.pbtxt"), "utf8")).toContain('name: "TEXT"\n');
    // A model: its name and the step change; 0.7 cannot move a folder, so it is told which to move.
    const model = at("rename_model");
    expect(model.classifier[0]).toBe('name: "sentiment_model"');
    expect(model.pipeline).toContain('      model_name: "sentiment_model"');
    expect(model.messages).toEqual([
      `Renamed 'sentiment_classifier' to 'sentiment_model' in the configs; move the folder ${path.join(models, "sentiment_classifier")} to ${path.join(models, "sentiment_model")} yourself: Triton takes a model's name from its folder, and this editor cannot rename folders.`,
    ]);
    expect(model.folder_still_there).toBe(1);
    // :lua vim.lsp.buf.workspace_symbol("mask"): the tensors of every model that match.
    expect(at("workspace_symbols").map((i: { file: string; text: string }) => `${i.file} ${i.text}`)).toEqual([
      "bert_large/config.pbtxt [Variable] attention_mask",
      "bert_tokenizer/config.pbtxt [Variable] ATTENTION_MASK",
      "sentiment_classifier/config.pbtxt [Variable] attention_mask",
    ]);
    // Folding: the header comment and every multi-line block (0.7 receives them; it folds by its own methods).
    expect(at("folding")).toContainEqual({ startLine: 0, endLine: 3, kind: "comment" });
    expect(at("folding")).toContainEqual({ startLine: 24, endLine: 62 });
    // Semantic tokens, decoded with the legend Neovim was given: each token's text and type.
    const st = at("semantic_tokens") as { data: number[]; legend: string[]; lines: string[] };
    const tokens: string[] = [];
    for (let i = 0, line = 0, col = 0; i < st.data.length; i += 5) {
      const [dl, dc, len, type] = st.data.slice(i, i + 4) as [number, number, number, number];
      col = dl === 0 ? col + dc : dc;
      line += dl;
      tokens.push(`${st.legend[type]} ${st.lines[line]!.slice(col, col + len)}`);
    }
    expect(tokens[0]).toMatch(/^comment #/);
    expect(tokens).toEqual(
      expect.arrayContaining([
        "property name",
        'string "sentiment_pipeline"',
        "property platform",
        "enumMember TYPE_STRING",
        "number 1",
      ]),
    );
    expect(at("stopped").clients).toBe(0);
  });
});
