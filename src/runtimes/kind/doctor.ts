import { INSTALL_HINT, KindTools, ToolMissingError } from "./tools.js";

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
export async function probeKindTools(tools: KindTools = new KindTools()): Promise<ToolVersion[]> {
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
