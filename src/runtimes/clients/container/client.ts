import Docker from "dockerode";
import { REAL_CLOCK, type Clock } from "../../../clock.js";
import { UserError } from "../../../errors.js";

export const DEFAULT_SOCKET = "/var/run/docker.sock";

/** Where the daemon is, from DOCKER_HOST (unix://, tcp://, ssh://) or the default socket. */
export function daemonAddress(env: NodeJS.ProcessEnv): string {
  return env.DOCKER_HOST?.trim() || `unix://${DEFAULT_SOCKET}`;
}

/** dockerode options from `env` rather than process.env, so callers decide which daemon. */
export function dockerOptions(env: NodeJS.ProcessEnv): Docker.DockerOptions {
  const addr = daemonAddress(env);
  if (addr.startsWith("unix://"))
    return {
      socketPath: addr.slice(7) || DEFAULT_SOCKET,
      host: undefined,
      port: undefined,
      protocol: "http",
    } as Docker.DockerOptions;
  const url = new URL(addr.includes("//") ? addr : `tcp://${addr}`);
  if (url.protocol === "ssh:")
    return {
      protocol: "ssh",
      host: url.hostname,
      port: url.port || 22,
      username: url.username || undefined,
      socketPath: undefined,
    } as Docker.DockerOptions;
  const tls = env.DOCKER_TLS_VERIFY === "1" || url.port === "2376";
  return {
    protocol: tls ? "https" : "http",
    host: url.hostname,
    port: url.port || (tls ? 2376 : 2375),
    socketPath: undefined,
  } as Docker.DockerOptions;
}

export function connectDocker(env: NodeJS.ProcessEnv = process.env): Docker {
  return new Docker(dockerOptions(env));
}

/** The status code dockerode puts on errors from the Engine API (undefined for transport errors). */
export function statusOf(err: unknown): number | undefined {
  const s = (err as { statusCode?: unknown })?.statusCode;
  return typeof s === "number" ? s : undefined;
}

/** The daemon's own message ("Error response from daemon: ..." in the CLI). */
export function daemonMessage(err: unknown): string {
  const json = (err as { json?: { message?: string } })?.json;
  if (json?.message) return json.message;
  const reason = (err as { reason?: string; message?: string })?.message ?? String(err);
  return reason.replace(/^\(HTTP code \d+\) [\w ]+ - /, "").trim();
}

export class DockerUnavailableError extends UserError {
  override name = "DockerUnavailableError";
}

/** Ping with a short deadline; a daemon that does not answer is a clear, fixable error. */
export async function requireDaemon(
  docker: Docker,
  env: NodeJS.ProcessEnv,
  timeoutMs = 5_000,
  clock: Clock = REAL_CLOCK,
): Promise<void> {
  const addr = daemonAddress(env);
  let timer: unknown;
  try {
    await Promise.race([
      docker.ping(),
      new Promise((_, reject) => {
        timer = clock.setTimeout(
          () => reject(Object.assign(new Error(`no answer within ${timeoutMs / 1000} s`), { code: "ETIMEDOUT" })),
          timeoutMs,
          { unref: true },
        );
      }),
    ]);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === "ENOENT"
        ? "its socket does not exist"
        : code === "ECONNREFUSED"
          ? "the connection was refused"
          : code === "EACCES"
            ? "permission denied on its socket"
            : code === "ETIMEDOUT"
              ? "it did not answer in time"
              : daemonMessage(err);
    throw new DockerUnavailableError(`cannot reach the Docker daemon at ${addr}: ${why}`, {
      hint:
        code === "EACCES"
          ? "Add yourself to the docker group (`sudo usermod -aG docker $USER`, then log in again), or use `--runtime local`."
          : `Start Docker (\`sudo systemctl start docker\`)${env.DOCKER_HOST ? `, check DOCKER_HOST (now ${env.DOCKER_HOST})` : ""}, or run Triton without Docker with \`--runtime local\`.`,
      cause: err,
    });
  } finally {
    clock.clearTimeout(timer);
  }
}

export interface DaemonFacts {
  version: string;
  apiVersion: string;
  runtimes: string[];
  defaultRuntime: string;
  storageDriver: string;
  /** The NVIDIA container runtime is registered (nvidia-ctk runtime configure --runtime=docker). */
  nvidia: boolean;
  /** Where the daemon reads CDI specs (Docker 27+ says; empty: CDI is off); undefined when it does not say. */
  cdiSpecDirs?: string[];
}

export async function daemonFacts(docker: Docker): Promise<DaemonFacts> {
  const [info, version] = await Promise.all([docker.info() as Promise<Record<string, unknown>>, docker.version()]);
  const runtimes = Object.keys((info.Runtimes as Record<string, unknown> | undefined) ?? {});
  const defaultRuntime = String(info.DefaultRuntime ?? "runc");
  return {
    version: version.Version,
    apiVersion: version.ApiVersion,
    runtimes,
    defaultRuntime,
    storageDriver: String(info.Driver ?? "?"),
    nvidia: runtimes.includes("nvidia") || defaultRuntime === "nvidia",
    ...(Array.isArray(info.CDISpecDirs) ? { cdiSpecDirs: (info.CDISpecDirs as unknown[]).map(String) } : {}),
  };
}

export const NVIDIA_FIX =
  "Install the NVIDIA Container Toolkit, run `sudo nvidia-ctk runtime configure --runtime=docker` and restart Docker (`sudo systemctl restart docker`); or run on the CPU with `--gpus none` (python-backend models with KIND_CPU instances work there).";

export function isNoGpuDriverError(err: unknown): boolean {
  return /could not select device driver .*capabilities: \[\[gpu\]\]/i.test(daemonMessage(err));
}

export function gpuUnavailableError(
  cause?: unknown,
  detail = "the Docker daemon has no NVIDIA runtime",
  hint = NVIDIA_FIX,
): UserError {
  return new UserError(`GPUs were requested (--gpus), but ${detail}`, { hint, cause, exitCode: 1 });
}
