import fs from "node:fs";
import net from "node:net";
import { UserError } from "../errors.js";

export interface PortHolder {
  pid: number;
  command: string;
}

/** Try to bind host:port; resolves true when it is free for us to use. */
export function isPortFree(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once("error", () => resolve(false));
    srv.listen({ port, host, exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

/** A port the kernel considers free right now (for tests and auto-assignment). */
export function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once("error", reject);
    srv.listen({ port: 0, host }, () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Socket inodes listening on `port`, read from /proc/net/tcp{,6} (state 0A = LISTEN). */
export function listeningInodes(port: number, procRoot = "/proc"): Set<string> {
  const inodes = new Set<string>();
  for (const file of ["net/tcp", "net/tcp6"]) {
    let text: string;
    try {
      text = fs.readFileSync(`${procRoot}/${file}`, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10) continue;
      const local = cols[1]!;
      const state = cols[3];
      const p = parseInt(local.slice(local.lastIndexOf(":") + 1), 16);
      if (state === "0A" && p === port) inodes.add(cols[9]!);
    }
  }
  return inodes;
}

/** Who listens on `port`, when /proc lets us see it (same user or root); undefined otherwise. */
export function findPortHolder(port: number, procRoot = "/proc"): PortHolder | undefined {
  const inodes = listeningInodes(port, procRoot);
  if (inodes.size === 0) return undefined;
  let pids: string[];
  try {
    pids = fs.readdirSync(procRoot).filter((e) => /^\d+$/.test(e));
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = fs.readdirSync(`${procRoot}/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = fs.readlinkSync(`${procRoot}/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const m = /^socket:\[(\d+)\]$/.exec(target);
      if (m && inodes.has(m[1]!)) {
        const argv = cmdlineOf(Number(pid), procRoot);
        return { pid: Number(pid), command: argv.join(" ") || "?" };
      }
    }
  }
  return undefined;
}

const PORT_FLAGS: Record<"http" | "grpc" | "metrics", string> = {
  http: "--http-port",
  grpc: "--grpc-port",
  metrics: "--metrics-port",
};

/** The endpoints' ports are distinct and free on `host`; otherwise a clear error naming who holds one. */
export async function requireFreePorts(
  ports: { http: number; grpc: number; metrics: number },
  host: string,
): Promise<void> {
  const seen = new Map<number, keyof typeof PORT_FLAGS>();
  for (const [name, port] of Object.entries(ports) as [keyof typeof PORT_FLAGS, number][]) {
    const other = seen.get(port);
    if (other)
      throw new UserError(`${PORT_FLAGS[name]} and ${PORT_FLAGS[other]} are both ${port}`, {
        hint: "Give each endpoint its own port.",
        exitCode: 2,
      });
    seen.set(port, name);
    if (await isPortFree(port, host)) continue;
    const holder = findPortHolder(port);
    throw new UserError(
      `port ${port} (${name}) on ${host} is already in use${holder ? ` by pid ${holder.pid} (${holder.command.slice(0, 120)})` : ""}`,
      { hint: `Stop that process, or choose another port with ${PORT_FLAGS[name]} N.` },
    );
  }
}

/**
 * A process's command line, read here rather than through state/process.ts: net/ sits below
 * state/ (state's staged paths read Triton's messages, and triton/ speaks through net/).
 */
function cmdlineOf(pid: number, procRoot: string): string[] {
  try {
    return fs
      .readFileSync(`${procRoot}/${pid}/cmdline`, "utf8")
      .split("\0")
      .filter((s) => s.length > 0);
  } catch {
    return [];
  }
}
