import readline from "node:readline";
import { execa } from "execa";
import { UserError } from "../../../errors.js";
import { log as rootLog } from "../../../log/logger.js";
import type { Child, ChildExit, KubectlClient, RunOptions, Tool } from "./kubectl-client.js";

export type { Child, ChildExit, KubectlClient, RunOptions, Tool } from "./kubectl-client.js";

const log = rootLog.child("kind:cli");

export type Exec = typeof execa;

export const KIND_VERSION = "v0.33.0";

export const INSTALL_HINT: Record<Tool, string> = {
  kind: `Install kind (only the kind runtime needs it): \`go install sigs.k8s.io/kind@${KIND_VERSION}\` (puts it in $(go env GOPATH)/bin, which must be on PATH), or download the binary for your platform from https://github.com/kubernetes-sigs/kind/releases and put it on PATH. Or use \`--runtime docker\` / \`--runtime local\`.`,
  kubectl:
    "Install kubectl (only the kind and cluster runtimes need it): see https://kubernetes.io/docs/tasks/tools/ (a single binary from https://dl.k8s.io/release/stable.txt's release, or your distribution's package), and put it on PATH.",
  docker: "Install the Docker CLI (kind drives Docker through it) and make sure `docker info` works.",
};

/** A tool the kind runtime drives is not installed (not on PATH). */
export class ToolMissingError extends UserError {
  override name = "ToolMissingError";
  constructor(
    readonly tool: Tool,
    cause?: unknown,
  ) {
    super(
      `${tool} was not found on PATH; ${tool === "kubectl" ? "the kind and cluster runtimes need it" : "the kind runtime needs it"}`,
      { hint: INSTALL_HINT[tool], cause },
    );
  }
}

/** kind or kubectl ran and failed; `stderr` is the tool's own account. */
export class ToolCommandError extends UserError {
  override name = "ToolCommandError";
  /** The command was killed at its time limit (a busy machine, a cluster slow to answer). */
  readonly timedOut: boolean;
  constructor(
    readonly tool: Tool,
    readonly args: string[],
    readonly toolExitCode: number | undefined,
    readonly stderr: string,
    options: { hint?: string; cause?: unknown; timedOut?: boolean } = {},
  ) {
    const what = `${tool} ${args
      .filter((a) => !a.startsWith("--context"))
      .slice(0, 4)
      .join(" ")}`;
    const detail = lastLines(stderr, 6) || `exit code ${toolExitCode ?? "?"}`;
    super(options.timedOut ? `\`${what}\` did not finish in time: ${detail}` : `\`${what}\` failed: ${detail}`, {
      hint: options.hint ?? `Run \`${tool} ${args.join(" ")}\` yourself to see the full output.`,
      cause: options.cause,
    });
    this.timedOut = options.timedOut === true;
  }
}

export function lastLines(text: string, n: number): string {
  return text
    .split("\n")
    .map((l) => l.trimEnd())
    .filter(Boolean)
    .slice(-n)
    .join("\n");
}

/**
 * The kind, kubectl and docker command-line tools, run with execa: the KubectlClient the kind and
 * cluster runtimes share, and kind's own CLI for the kind runtime. The spawn function and the
 * environment (PATH above all) are parameters, so tests substitute the binaries, not modules.
 */
export class KubectlTools implements KubectlClient {
  constructor(
    readonly exec: Exec = execa,
    readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  kind(args: string[], o: RunOptions = {}): Promise<string> {
    return this.run("kind", args, o);
  }

  /**
   * kubectl against one kind cluster's context; `--context` is always explicit, the user's current context is never
   * used.
   */
  kubectl(context: string, args: string[], o: RunOptions = {}): Promise<string> {
    return this.run("kubectl", [`--context=${context}`, ...args], o);
  }

  docker(args: string[], o: RunOptions = {}): Promise<string> {
    return this.run("docker", args, o);
  }

  async run(tool: Tool, args: string[], o: RunOptions = {}): Promise<string> {
    log.debug("run", { tool, args });
    const sub = this.exec(tool, args, {
      env: this.env,
      extendEnv: false,
      reject: false,
      timeout: o.timeoutMs ?? 60_000,
      ...(o.input !== undefined
        ? { input: o.input }
        : o.inputFile
          ? { inputFile: o.inputFile }
          : { stdin: "ignore" as const }),
    });
    if (o.onStderrLine && sub.stderr) {
      const rl = readline.createInterface({ input: sub.stderr });
      rl.on("line", (l) => o.onStderrLine!(l));
    }
    const r = await sub;
    if (r.code === "ENOENT" || (r.failed && r.exitCode === undefined && /ENOENT/.test(String(r.message))))
      throw new ToolMissingError(tool, r.cause ?? r);
    if (r.failed) {
      throw new ToolCommandError(tool, args, r.exitCode, String(r.stderr ?? ""), {
        timedOut: r.timedOut,
        cause: r.cause ?? undefined,
      });
    }
    return String(r.stdout ?? "");
  }

  /** Starts a long-running tool; its stdout lines go to `onLine`. */
  spawn(tool: Tool, args: string[], onLine: (line: string, stream: "stdout" | "stderr") => void): Child {
    log.debug("spawn", { tool, args });
    const sub = this.exec(tool, args, {
      env: this.env,
      extendEnv: false,
      reject: false,
      buffer: false,
      stdin: "ignore",
      cleanup: true,
    });
    let stderr = "";
    if (sub.stdout) readline.createInterface({ input: sub.stdout }).on("line", (l) => onLine(l, "stdout"));
    if (sub.stderr) {
      readline.createInterface({ input: sub.stderr }).on("line", (l) => {
        stderr = (stderr + l + "\n").slice(-8192);
        onLine(l, "stderr");
      });
    }
    const exited: Promise<ChildExit> = sub.then(
      (r) => ({
        code: r.exitCode,
        signal: r.signal,
        stderr,
        ...(r.code === "ENOENT"
          ? { error: new ToolMissingError(tool, r.cause) }
          : r.failed && r.exitCode === undefined && !r.signal
            ? { error: new Error(r.message) }
            : {}),
      }),
      (err: unknown) => ({
        code: undefined,
        signal: undefined,
        stderr,
        error: err instanceof Error ? err : new Error(String(err)),
      }),
    );
    return {
      pid: sub.pid,
      process: sub,
      exited,
      kill: (signal: NodeJS.Signals = "SIGTERM") => {
        sub.kill(signal);
      },
    };
  }
}
