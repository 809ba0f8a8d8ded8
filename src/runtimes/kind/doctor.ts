import type { DoctorCheck } from "../doctor-check.js";
import { INSTALL_HINT, KubectlTools, ToolMissingError } from "../clients/kubectl/tools.js";

export interface ToolVersion {
  tool: "kind" | "kubectl";
  /** The version it reports; undefined when it is not installed. */
  version?: string;
  /** It is installed but did not answer (the message). */
  error?: string;
  hint?: string;
}

/** `kind version` prints "kind v0.33.0 go1.24.2 linux/amd64". */
export function parseKindVersion(out: string): string | undefined {
  return /\bv\d+\.\d+\.\d+\S*/.exec(out)?.[0];
}

/** `kubectl version --client --output=json`: clientVersion.gitVersion. */
export function parseKubectlVersion(out: string): string | undefined {
  try {
    const v = (JSON.parse(out) as { clientVersion?: { gitVersion?: string } }).clientVersion?.gitVersion;
    return typeof v === "string" ? v : undefined;
  } catch {
    return undefined;
  }
}

/** What `doctor` says about the kind runtime's tools: their versions, or how to install them. */
export async function probeKindTools(tools: KubectlTools = new KubectlTools()): Promise<ToolVersion[]> {
  const one = async (
    tool: "kind" | "kubectl",
    args: string[],
    parse: (s: string) => string | undefined,
  ): Promise<ToolVersion> => {
    try {
      const out = await tools.run(tool, args, { timeoutMs: 10_000 });
      return { tool, version: parse(out) ?? (out.trim().split("\n")[0] || "unknown version") };
    } catch (err) {
      if (err instanceof ToolMissingError) return { tool, hint: INSTALL_HINT[tool] };
      return { tool, error: (err as Error).message, hint: INSTALL_HINT[tool] };
    }
  };
  return Promise.all([
    one("kind", ["version"], parseKindVersion),
    one("kubectl", ["version", "--client", "--output=json"], parseKubectlVersion),
  ]);
}

/** The kind runtime's tools. Neither fails `doctor`: only `--runtime kind` needs them. */
export async function kindChecks(env: NodeJS.ProcessEnv): Promise<DoctorCheck[]> {
  return (await probeKindTools(new KubectlTools(undefined, env))).map((t) =>
    t.version
      ? { name: t.tool, ok: true, detail: `${t.tool} ${t.version}` }
      : {
          name: t.tool,
          ok: false,
          warn: true,
          detail: t.error
            ? `${t.tool} did not answer: ${t.error} (only the kind runtime needs it)`
            : `not installed (only the kind runtime needs it)`,
          ...(t.hint ? { hint: t.hint } : {}),
        },
  );
}
