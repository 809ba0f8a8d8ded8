import { execFile, spawnSync } from "node:child_process";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CLI, copySampleModels, testEnv } from "../helpers/cli.js";

// Emacs with eglot (Debian's emacs-nox and elpa-eglot 1.9) as the second real editor: the
// README's setup, then open a config with a typo, see flymake's diagnostic, apply eglot's quick
// fix, complete a field, hover, format the buffer, and a project setting sent through
// eglot-workspace-configuration (test/lsp/emacs/session.el).

// Skipped only where there is no Emacs at all (CI installs emacs-nox and elpa-eglot); an Emacs
// without eglot fails, saying so.
const hasEmacs = spawnSync("emacs", ["--version"]).status === 0;
if (!hasEmacs)
  console.warn("skipping the Emacs session: emacs is not installed (apt-get install emacs-nox elpa-eglot)");
const SESSION = path.join(import.meta.dirname, "emacs", "session.el");
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await fsp.rm(d, { recursive: true, force: true });
});

interface Step {
  step: string;
  data: any;
}

describe.skipIf(!hasEmacs)("triton-dev lsp in Emacs (eglot)", () => {
  it("flymake's diagnostic on a typo, the quick fix, a completion, a hover, formatting and a project setting", async () => {
    const models = await copySampleModels();
    dirs.push(models);
    const config = path.join(models, "image_classifier", "config.pbtxt");
    const text = await fsp.readFile(config, "utf8");
    await fsp.writeFile(config, text.replace("max_batch_size:", "max_batch_sise:"));
    // A repository in git, as users keep one: eglot's project is then the repository, one server for all its configs.
    expect(spawnSync("git", ["init", "-q", models]).status).toBe(0);
    const home = await fsp.mkdtemp(path.join(os.tmpdir(), "triton-dev-emacs-home-"));
    dirs.push(home);
    const transcript = path.join(models, "..", `emacs-${path.basename(models)}.jsonl`);
    dirs.push(transcript);
    const env = await testEnv({
      TRITON_DEV_LSP_CMD: JSON.stringify([process.execPath, CLI, "lsp", "--stdio"]),
      EMACS_CONFIG_FILE: config,
      EMACS_GPU_CONFIG_FILE: path.join(models, "resnet50_fp16", "config.pbtxt"),
      EMACS_TRANSCRIPT: transcript,
      // Emacs's own files (~/.emacs.d) away from the user's home and from the repository.
      HOME: home,
    });
    dirs.push(env.TRITON_DEV_STATE_DIR!);
    const { code, stderr } = await new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile("emacs", ["--batch", "-l", SESSION], { env, timeout: 100_000 }, (err, _out, stderr) =>
        resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stderr }),
      ),
    );
    const steps = (await fsp.readFile(transcript, "utf8").catch(() => ""))
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Step);
    const at = (name: string) => steps.find((s) => s.step === name)?.data;
    expect(code, `${JSON.stringify(steps, null, 2)}\n${stderr}`).toBe(0);

    expect(at("opened").mode).toBe("pbtxt-mode");
    const [d] = at("diagnostics");
    expect(d).toMatchObject({ line: 7, col: 0, code: "config-unknown-field", type: "eglot-error" });
    expect(d.text).toMatch(
      /^triton-dev \[config-unknown-field\]: unknown field 'max_batch_sise' in ModelConfig\nhint: Did you mean 'max_batch_size'\?/,
    );
    expect(at("after_fix")).toEqual({ line: "max_batch_size: 256", diagnostics: 0 });
    expect(at("completion")).toContain("max_queue_delay_microseconds");
    // Completed by M-TAB, then a value typed.
    expect(at("completed").line).toBe("  max_queue_delay_microseconds: 100");
    expect(at("hover").first_line).toMatch(/max_batch_size/);
    expect(at("formatted").line).toBe('backend: "python"');
    // Saved by Emacs after the formatting: the file is the buffer.
    expect(await fsp.readFile(config, "utf8")).toBe(at("formatted").text);
    // The project's setting says no GPU, then (changed) a GPU: whatever this machine has, the
    // warning follows the setting.
    expect(at("gpu").map((x: { code: string }) => x.code)).toContain("gpu-unavailable");
    expect(at("gpu_setting_changed").map((x: { code: string }) => x.code)).not.toContain("gpu-unavailable");
    expect(at("stopped")).toEqual({ running: false, managed: false });
  }, 120_000);
});
