/**
 * A runtime driver for the session's unit tests: what a real driver does at the session's seam
 * (plan, deliver, start, a server answering Triton's HTTP API on the run's port, stop, attach,
 * leftovers), on 127.0.0.1 in this process, with every step recorded and each one able to fail,
 * wait or report the server gone. The session, `status` and `down` get it through their
 * `runtimes` parameter (runtimes/registry.ts `Runtimes`); no module is replaced. It lives beside
 * the interface it stands in for (driver.ts), so a change there shows here at once; it imports
 * only Node and types, and nothing in src/ imports it (the architecture test checks).
 */
import fs from "node:fs";
import fsp from "node:fs/promises";
import http from "node:http";
import path from "node:path";
import type { Clock } from "../clock.js";
import type {
  AttachedRun,
  Delivery,
  DriverContext,
  PlannedRun,
  RunFolderPaths,
  RuntimeDriver,
  ServerHandle,
  StartedRun,
  StartOptions,
  StopReport,
} from "./driver.js";
import type { RuntimeKind } from "./kinds.js";
import type { RuntimeChoice, Runtimes } from "./registry.js";
import type { RunState } from "../state/run-state.js";

/** A step of the driver, as `FakeDriver.calls` records it. */
export type FakeStep =
  | "options"
  | "plan"
  | "deliver"
  | "start"
  | "server-listening"
  | "server-stopped"
  | "released"
  | "attach"
  | "attached-stop"
  | "supervise"
  | "supervision-stopped"
  | "cleanup";

export interface FakeDriverBehaviour {
  /** plan() throws this (a prerequisite missing): nothing may exist afterwards. */
  planError?: Error;
  /** start() throws this after listening (a driver that failed halfway stops what it made). */
  startError?: Error;
  /** start() waits for this before it returns (a container or cluster taking seconds). */
  startGate?: Promise<void>;
  /** The server exits this way during start, once listening (Triton crashing on a bad flag). */
  exitDuringStart?: { code: number | null; signal: NodeJS.Signals | null };
  /** The server answers /v2/health/live only once this resolves (models loading). */
  liveGate?: Promise<void>;
  /** The started run's readiness strategy (default: Triton answering live, as a process's or container's). */
  readiness?: StartedRun["readiness"];
  /** A server of an earlier run to reuse (docker's reattach): its run folder. */
  reuse?: { runId: string; runDir: string };
  /** Models the server reports in its index, by name, and their state (default: every staged model READY). */
  modelStates?: Record<string, "READY" | "UNAVAILABLE" | "LOADING">;
  /** An attached recorded run says it is alive (default: its server is listening in this process). */
  alive?: (state: RunState) => boolean;
  /** A recorded run is handed over to a new `up` of this folder (docker's detached container). */
  handsOver?: boolean;
}

/** One fake Triton: the run's HTTP port in this process. */
class FakeServer {
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  #exit!: (e: { code: number | null; signal: NodeJS.Signals | null }) => void;
  #server: http.Server;
  live = false;
  listening = false;
  requests: string[] = [];

  constructor(
    readonly o: StartOptions,
    private readonly models: () => Array<{ name: string; version: string; state: string }>,
  ) {
    this.exited = new Promise((resolve) => (this.#exit = resolve));
    this.#server = http.createServer((req, res) => {
      this.requests.push(`${req.method} ${req.url}`);
      req.resume();
      const send = (status: number, body?: unknown) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(body === undefined ? "" : JSON.stringify(body));
      };
      if (
        req.headers[o.repositoryKey.header] !== undefined &&
        req.headers[o.repositoryKey.header] !== o.repositoryKey.value
      )
        return send(403, { error: "wrong key" });
      if (req.url === "/v2/health/live") return send(this.live ? 200 : 400);
      if (req.url === "/v2/health/ready") return send(this.live ? 200 : 400);
      if (req.method === "POST" && req.url === "/v2/repository/index") return send(200, this.models());
      if (req.url === "/v2/models/stats") return send(200, { model_stats: [] });
      send(404, { error: `the fake Triton does not answer ${req.method} ${req.url}` });
    });
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen(this.o.ports.http, this.o.host, resolve);
    });
    this.listening = true;
  }

  async exit(e: { code: number | null; signal: NodeJS.Signals | null }): Promise<void> {
    if (!this.listening) return;
    this.listening = false;
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#exit(e);
  }
}

export class FakeDriver implements RuntimeDriver {
  readonly calls: FakeStep[] = [];
  /** Every server this driver started, in order. */
  readonly servers: FakeServer[] = [];
  /** The deliveries it made: the run folders whose key it wrote. */
  readonly delivered: RunFolderPaths[] = [];
  /** The clock the last plan was handed (`DriverContext.clock`): the run's, which a real driver's waits run on. */
  planClock: Clock | undefined;

  constructor(
    readonly kind: RuntimeKind = "local",
    public behaviour: FakeDriverBehaviour = {},
  ) {}

  /** The servers still listening (none may be left after a stop or a failed start). */
  get running(): FakeServer[] {
    return this.servers.filter((s) => s.listening);
  }

  options(): Record<string, never> {
    this.calls.push("options");
    return {};
  }

  async plan(input: { modelsDir: string }, _options: unknown, ctx: DriverContext): Promise<PlannedRun> {
    this.calls.push("plan");
    this.planClock = ctx.clock;
    if (this.behaviour.planError) throw this.behaviour.planError;
    ctx.emit({ type: "progress", runtime: this.kind, step: "plan", message: `planned ${input.modelsDir}` });
    const b = this.behaviour;
    return {
      ...(b.reuse ? { reuse: b.reuse } : {}),
      gpus: 0,
      gpuSkipReason: "the fake server has no GPU",
      canDisableAutoComplete: true,
      deliver: async (folder) => this.deliver(folder),
      start: async (o) => this.start(o),
      startHint: () => "the fake driver's advice",
    };
  }

  private async deliver(folder: RunFolderPaths): Promise<Delivery> {
    this.calls.push("deliver");
    this.delivered.push(folder);
    const dir = path.join(folder.runDir, "key");
    await fsp.mkdir(dir, { recursive: true });
    const file = path.join(dir, "repository.key");
    const value = await fsp.readFile(file, "utf8").catch(async () => {
      const v = `fake-${Math.random().toString(16).slice(2)}`;
      await fsp.writeFile(file, v);
      return v;
    });
    return { repositoryKey: { header: "triton-dev-key", value, dir } };
  }

  private async start(o: StartOptions) {
    this.calls.push("start");
    const b = this.behaviour;
    const server = new FakeServer(o, () => this.index(o));
    this.servers.push(server);
    await server.listen();
    this.calls.push("server-listening");
    await fsp.appendFile(o.logFile, "I0101 00:00:00.000000 1 server.cc:1] fake Triton started\n");
    if (b.startError) {
      // A driver that failed halfway stops what it started before it throws.
      await server.exit({ code: null, signal: "SIGTERM" });
      this.calls.push("server-stopped");
      throw b.startError;
    }
    if (b.exitDuringStart) void server.exit(b.exitDuringStart);
    else if (b.liveGate) void b.liveGate.then(() => (server.live = true));
    else server.live = true;
    await b.startGate;
    const handle: ServerHandle = {
      pid: process.pid,
      endpoints: {
        http: `http://${o.host}:${o.ports.http}`,
        grpc: `${o.host}:${o.ports.grpc}`,
        metrics: `http://${o.host}:${o.ports.metrics}/metrics`,
      },
      exited: server.exited,
      stop: async () => {
        const was = server.listening;
        await server.exit({ code: 0, signal: null });
        if (was) this.calls.push("server-stopped");
        return { ms: 1, ended: was ? "unloaded" : "gone" };
      },
      release: () => void this.calls.push("released"),
    };
    return {
      handle,
      executable: process.execPath,
      record: { port: o.ports.http },
      // Triton live at the port, as a process's or container's (Node and types only: no triton/ import).
      readiness:
        this.behaviour.readiness ??
        (({ host, ports, client }) => ({
          description: `Triton at ${host}:${ports.http}`,
          check: () => client.isLive(),
        })),
    };
  }

  private index(o: StartOptions) {
    const states = this.behaviour.modelStates;
    return this.stagedModels(o.repository).map((name) => ({ name, version: "1", state: states?.[name] ?? "READY" }));
  }

  /** The staging repository's model folders, as Triton would find them there. */
  private stagedModels(repository: string): string[] {
    try {
      return fs.readdirSync(repository).filter((n) => !n.startsWith("."));
    } catch {
      return [];
    }
  }

  attach(state: RunState): AttachedRun {
    this.calls.push("attach");
    const server = this.servers.find((s) => s.o.runId === state.runId);
    const alive = () => this.behaviour.alive?.(state) ?? !!server?.listening;
    return {
      state,
      alive: async () => alive(),
      describe: () => ({
        where: `fake port ${state.ports.http}`,
        goneWhat: "the fake server",
        lines: [["fake", `port ${state.ports.http}`]],
        json: { fake: { port: state.ports.http } },
      }),
      handsOverTo: (kind, modelsDir) =>
        !!this.behaviour.handsOver && kind === state.runtime && modelsDir === state.modelsDir,
      stop: async (): Promise<StopReport> => {
        this.calls.push("attached-stop");
        const was = !!server?.listening;
        await server?.exit({ code: 0, signal: null });
        return {
          what: "the fake server stopped",
          staleWhat: "nothing was left",
          json: { fake: true },
          ...(was ? { outcome: { ms: 1, ended: "unloaded" } } : {}),
        };
      },
      supervise: async () => {
        this.calls.push("supervise");
        return { stop: async () => void this.calls.push("supervision-stopped") };
      },
    };
  }

  async cleanup(): Promise<{ json: Record<string, Array<string | number>>; lines: string[] }> {
    this.calls.push("cleanup");
    return { json: {}, lines: [] };
  }

  /** Stops every server still listening (a test's last word). */
  async close(): Promise<void> {
    for (const s of this.servers) await s.exit({ code: 0, signal: null });
  }
}

/** The session's view of the runtimes, with `driver` as the only one: what `auto` chooses too. */
export function fakeRuntimes(driver: FakeDriver): Runtimes {
  return {
    kinds: [driver.kind],
    load: async (kind) => {
      if (kind !== driver.kind) throw new Error(`the fake runtimes have no ${kind} runtime`);
      return driver;
    },
    choose: async (requested): Promise<RuntimeChoice> => ({
      runtime: requested === "auto" ? driver.kind : requested,
      why: requested === "auto" ? "the fake runtime is the only one" : `--runtime ${requested}`,
    }),
  };
}
