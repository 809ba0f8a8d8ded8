import { z } from "zod";
import type { LintOptions } from "../repo/lint.js";

/**
 * The server's settings, as the editor sends them at start (`initializationOptions`) and at any
 * time after (`workspace/didChangeConfiguration`): the choices `triton-dev lint` takes as flags.
 * Either the settings themselves or under a "triton-dev" (or "tritonDev") section, the way VS Code,
 * Neovim and eglot nest them.
 */

const SECTION_NAMES = ["triton-dev", "tritonDev", "triton_dev"];

export interface LspSettings {
  /** Whether this machine has a GPU (`lint --gpu/--no-gpu`); "auto": as the machine says. */
  gpu: boolean | "auto";
  /** Triton's config auto-complete (`lint --disable-auto-complete-config` is false). */
  autoComplete: boolean;
  /** The runtime whose backends are checked (`lint --runtime`), and its image (`--image`). */
  runtime?: string;
  image?: string;
}

export const DEFAULT_SETTINGS: LspSettings = { gpu: "auto", autoComplete: true };

/** What the machine says when `gpu` is "auto": the NVIDIA GPUs its driver lists (undefined: unknown). */
export type GpuCount = () => Promise<number | undefined>;

/**
 * Settings read from what the editor sent, on top of `base` (a setting not named keeps its
 * value). A wrong value is named in `problems` (for the editor's log and a message) and ignored.
 */
export function readSettings(
  raw: unknown,
  base: LspSettings,
  runtimeKinds: readonly string[],
): { settings: LspSettings; problems: string[] } {
  const section = sectionOf(raw);
  const problems: string[] = [];
  const settings: LspSettings = { ...base };
  if (section === undefined) return { settings, problems };
  const fields = {
    gpu: z.union([z.boolean(), z.literal("auto")]),
    autoComplete: z.boolean(),
    runtime: z.string().refine((r) => runtimeKinds.includes(r), { message: `one of ${runtimeKinds.join(", ")}` }),
    image: z.string().min(1),
  };
  for (const [key, schema] of Object.entries(fields)) {
    const value = section[key];
    if (value === undefined || value === null) continue;
    const r = schema.safeParse(value);
    if (!r.success) {
      problems.push(
        `triton-dev setting '${key}': ${JSON.stringify(value)} is not valid (${r.error.issues[0]?.message ?? "wrong type"}); keeping ${JSON.stringify(settings[key as keyof LspSettings] ?? null)}`,
      );
      continue;
    }
    (settings as unknown as Record<string, unknown>)[key] = r.data;
  }
  return { settings, problems };
}

function sectionOf(raw: unknown): Record<string, unknown> | undefined {
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) return undefined;
  const o = raw as Record<string, unknown>;
  for (const name of SECTION_NAMES) {
    const s = o[name];
    if (s && typeof s === "object" && !Array.isArray(s)) return s as Record<string, unknown>;
  }
  // didChangeConfiguration's own wrapper.
  if ("settings" in o) return sectionOf(o.settings);
  return o;
}

/**
 * What lint knows of a runtime (one of `runtimeKinds`) and its image: runtimes/kinds.ts
 * `lintFacts`, handed in by `triton-dev lsp`, since the language server imports no runtime.
 */
export type LintFacts = (runtime?: string, image?: string) => Pick<LintOptions, "server" | "gpuOnly">;

/** The lint options the settings give, as `triton-dev lint` builds them from its flags. */
export async function lintOptionsOf(s: LspSettings, gpuCount?: GpuCount, facts?: LintFacts): Promise<LintOptions> {
  // KIND_GPU without a GPU is a warning here as in `lint`: the config may be meant for another machine.
  const o: LintOptions = { gpuMissingSeverity: "warning", ...facts?.(s.runtime, s.runtime ? s.image : undefined) };
  if (!s.autoComplete) o.autoComplete = false;
  if (s.gpu !== "auto") o.gpuAvailable = s.gpu;
  else {
    const count = await gpuCount?.();
    if (count !== undefined) {
      o.gpuAvailable = count > 0;
      if (count > 0) o.gpuCount = count;
    }
  }
  return o;
}
