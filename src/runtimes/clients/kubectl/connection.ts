import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { REAL_CLOCK, type Clock } from "../../../clock.js";
import { UserError } from "../../../errors.js";
import { log as rootLog } from "../../../log/logger.js";
import { compareTimestamps, parseTimestamp, splitLogLine } from "../../log-timestamps.js";
import type { Ports } from "../../driver.js";
import { CONTAINER_NAME } from "../../../k8s/manifests.js";
import { currentPod, podOutcome, podSchema, type Pod, type PodOutcome } from "./pod-status.js";
import { runSelector } from "./run-label.js";
import type { Child, KubectlClient } from "./kubectl-client.js";
import { lastLines, ToolCommandError } from "./tools.js";
import { z } from "zod";
import { ReadinessAbortedError } from "../../../triton/readiness.js";

const log = rootLog.child("kind:connection");

/** Inside the pod (the article's ports). */
const POD_PORTS: Ports = { http: 8000, grpc: 8001, metrics: 8002 };

export interface ConnectionOptions {
  tools: KubectlClient;
  cluster: string;
  context: string;
  namespace: string;
  runId: string;
  image: string;
  ports: Ports;
  host: string;
  logFile: string;
  runDir: string;
  /** Continue the log from where an earlier follower stopped (the detached run's hand-over). */
  resume: boolean;
  onLogLine?: (line: string) => void;
  /** Whose cluster (pod-status.ts OutcomeContext.runtime); default kind. */
  runtime?: "kind" | "cluster";
  pollMs?: number;
  /** How long the cluster may not answer before the run counts as gone. */
  unreachableMs?: number;
  /** The time the poll, the port-forward's deadline, the restart backoffs and timestamps run on (../../../clock.ts). */
  clock?: Clock;
}

export type Exit = { code: number | null; signal: NodeJS.Signals | null };

/** What one poll of the cluster saw. */
export interface Snapshot {
  at: number;
  /** The cluster answered. */
  ok: boolean;
  error?: string;
  deployment: boolean;
  pods: Pod[];
}

const listSchema = z.object({ items: z.array(z.object({ kind: z.string().optional() }).passthrough()) });

export function cursorFile(runDir: string): string {
  return path.join(runDir, "kind-log.cursor");
}

/** The `Forwarding from 127.0.0.1:8000 -> 8000` lines of kubectl port-forward: the local port. */
export function forwardedPort(line: string): number | undefined {
  const m = /^Forwarding from (?:\[[^\]]*\]|[^\s]+):(\d+) -> \d+/.exec(line.trim());
  return m ? Number(m[1]) : undefined;
}

export function portForwardArgs(o: { namespace: string; host: string; pod: string; ports: Ports }): string[] {
  return [
    `--namespace=${o.namespace}`,
    "port-forward",
    `--address=${o.host}`,
    `pod/${o.pod}`,
    `${o.ports.http}:${POD_PORTS.http}`,
    `${o.ports.grpc}:${POD_PORTS.grpc}`,
    `${o.ports.metrics}:${POD_PORTS.metrics}`,
  ];
}

export function logArgs(o: {
  namespace: string;
  pod: string;
  follow: boolean;
  previous?: boolean;
  since?: string;
  tail?: number;
}): string[] {
  return [
    `--namespace=${o.namespace}`,
    "logs",
    `pod/${o.pod}`,
    `--container=${CONTAINER_NAME}`,
    "--timestamps",
    ...(o.follow ? ["--follow"] : []),
    ...(o.previous ? ["--previous"] : []),
    ...(o.since ? [`--since-time=${o.since}`] : []),
    ...(o.tail !== undefined ? [`--tail=${o.tail}`] : []),
  ];
}

/** `p`, or nothing after `ms`; the timer is cleared either way, so it never keeps the process alive. */
async function within(p: Promise<unknown>, ms: number, clock: Clock): Promise<void> {
  let t: unknown;
  await Promise.race([p, new Promise<void>((r) => (t = clock.setTimeout(r, ms)))]);
  clock.clearTimeout(t);
}

/**
 * What connects this machine to Triton in the kind cluster, for as long as the run lasts: a
 * poll of the Deployment and its pod, `kubectl port-forward` to the pod (started again when the
 * pod restarts or is replaced), and `kubectl logs --follow` of the triton container appended to
 * the run's log file (continued across container restarts), where `logs`, the start-up error
 * report and poll mode's reload outcomes read it.
 *
 * The port-forward targets the pod rather than the Service: kubectl would pick any pod the
 * Service selects, a terminating one of an earlier run included.
 */
export class PodConnection {
  readonly exited: Promise<Exit>;
  private resolveExit!: (e: Exit) => void;
  private stopping = false;
  private released = false;
  private timer: unknown;
  private last: Snapshot | undefined;
  private unreachableSince: number | undefined;
  private missing = 0;
  private waiters: Array<() => void> = [];
  private forwarder: Child | undefined;
  private follow: Child | undefined;
  private forwardLoop: Promise<void> | undefined;
  private logLoop: Promise<void> | undefined;
  private forwarded = new Set<number>();
  private forwardReady: Array<() => void> = [];
  private cursor: [number, number] | undefined;
  private cursorRaw: string | undefined;
  private out: fs.WriteStream | undefined;
  private readonly now: () => number;
  private readonly clock: Clock;
  private readonly pollMs: number;
  private polling = false;

  constructor(readonly o: ConnectionOptions) {
    this.exited = new Promise((r) => (this.resolveExit = r));
    this.clock = o.clock ?? REAL_CLOCK;
    this.now = () => this.clock.now();
    this.pollMs = o.pollMs ?? 1_000;
  }

  /** The running `kubectl port-forward` (what ServerHandle.pid is for this runtime). */
  get pid(): number | undefined {
    return this.forwarder?.pid;
  }

  /** Poll the cluster and follow the log; the port-forward starts with forward(). */
  async start(): Promise<void> {
    if (this.o.resume) {
      const saved = await fsp.readFile(cursorFile(this.o.runDir), "utf8").catch(() => "");
      this.cursor = parseTimestamp(saved.trim());
      this.cursorRaw = this.cursor ? saved.trim() : undefined;
      // No recorded position: what came before is in the file already; only new lines.
      if (!this.cursor) {
        this.cursorRaw = new Date(this.now()).toISOString();
        this.cursor = parseTimestamp(this.cursorRaw);
      }
    }
    this.out = fs.createWriteStream(this.o.logFile, { flags: "a" });
    await this.poll();
    this.timer = this.clock.setInterval(() => void this.poll(), this.pollMs);
    this.logLoop = this.followLoop();
  }

  /** The next poll's result (undefined once stopping). */
  nextSnapshot(): Promise<Snapshot | undefined> {
    if (this.stopping) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(() => resolve(this.stopping ? undefined : this.last)));
  }

  latest(): Snapshot | undefined {
    return this.last;
  }

  private async poll(): Promise<void> {
    if (this.polling || this.stopping) return;
    this.polling = true;
    try {
      const snap = await this.fetch();
      this.last = snap;
      this.judge(snap);
      for (const w of this.waiters.splice(0)) w();
    } finally {
      this.polling = false;
    }
  }

  private async fetch(): Promise<Snapshot> {
    const at = this.now();
    try {
      const out = await this.o.tools.kubectl(
        this.o.context,
        [
          `--namespace=${this.o.namespace}`,
          "get",
          "deployments,pods",
          `--selector=${runSelector(this.o.runId)}`,
          "--output=json",
        ],
        { timeoutMs: 15_000 },
      );
      const items = listSchema.parse(JSON.parse(out)).items;
      const pods: Pod[] = [];
      for (const i of items.filter((x) => x.kind === "Pod")) {
        const p = podSchema.safeParse(i);
        if (p.success) pods.push(p.data);
      }
      return { at, ok: true, deployment: items.some((x) => x.kind === "Deployment"), pods };
    } catch (err) {
      // `kind delete cluster` removes the context: the cluster, and so the Deployment, is gone.
      if (err instanceof ToolCommandError && /context .* does not exist/i.test(err.stderr))
        return { at, ok: true, deployment: false, pods: [] };
      return { at, ok: false, error: err instanceof Error ? err.message : String(err), deployment: false, pods: [] };
    }
  }

  private judge(s: Snapshot): void {
    if (!s.ok) {
      this.unreachableSince ??= s.at;
      if (s.at - this.unreachableSince >= (this.o.unreachableMs ?? 30_000)) {
        log.warn("the kind cluster does not answer; the run is over", { cluster: this.o.cluster, error: s.error });
        void this.end({ code: 1, signal: null });
      }
      return;
    }
    this.unreachableSince = undefined;
    // Twice in a row: an apply in progress can briefly list no Deployment.
    this.missing = s.deployment ? 0 : this.missing + 1;
    if (this.missing >= 2) {
      log.info("the Deployment is gone; the run is over", { runId: this.o.runId });
      void this.end({ code: null, signal: "SIGTERM" });
    }
  }

  /**
   * The pod as the last poll saw it: its running container (the startup probe passed, so Triton is
   * live), or undefined while it starts (`onWaiting` hears what it waits for, once per change).
   * Throws a ReadinessAbortedError when it can never run, carrying a UserError (PodError) that says
   * what is wrong and what to do where the pod says why. The readiness strategy
   * (pod-readiness.ts) asks this between its checks, on the session's clock.
   */
  async runningNow(
    onWaiting?: (detail: string) => void,
  ): Promise<Extract<PodOutcome, { state: "running" }> | undefined> {
    const s = this.last;
    if (this.stopping || !s) throw new ReadinessAbortedError("stopped while waiting for the Triton pod");
    if (!s.ok) return undefined;
    if (!s.deployment && this.missing >= 2)
      throw new ReadinessAbortedError("the Triton Deployment was deleted while it started");
    const outcome = this.outcomeOf(s.pods);
    if (outcome.state === "running") return outcome;
    if (outcome.state === "failed")
      throw new ReadinessAbortedError(outcome.message, { cause: await this.failure(outcome) });
    if (outcome.detail !== this.waitingFor) {
      this.waitingFor = outcome.detail;
      onWaiting?.(outcome.detail);
    }
    return undefined;
  }

  private waitingFor = "";

  /** The run's pods judged as this connection's cluster and image (pod-status.ts). */
  private outcomeOf(pods: Pod[]): PodOutcome {
    return podOutcome(pods, {
      cluster: this.o.cluster,
      context: this.o.context,
      namespace: this.o.namespace,
      image: this.o.image,
      container: CONTAINER_NAME,
      now: this.now(),
      ...(this.o.runtime ? { runtime: this.o.runtime } : {}),
    });
  }

  /** kubectl port-forward has listened on every port at least once (Triton can have been asked something). */
  get listening(): boolean {
    return this.listened;
  }

  private listened = false;

  /** What kubectl port-forward last said went wrong (a port another program holds), if anything. */
  get forwardProblem(): string | undefined {
    return this.forwardError;
  }

  /** The failure as the user sees it: the pod's reason, with the container's last log lines where they explain it. */
  private async failure(f: Extract<PodOutcome, { state: "failed" }>): Promise<UserError> {
    let lines = "";
    // The container runtime writes the last lines of a container that just exited a moment
    // after it reports the exit: an empty answer is asked again.
    for (let attempt = 0; f.logs && !lines && attempt < 4; attempt++) {
      if (attempt > 0) await this.delay(500);
      lines = await this.o.tools
        .kubectl(
          this.o.context,
          logArgs({
            namespace: this.o.namespace,
            pod: f.pod,
            follow: false,
            previous: f.logs === "previous",
            tail: 12,
          }),
          { timeoutMs: 15_000 },
        )
        .then((t) =>
          lastLines(
            t
              .split("\n")
              .map((l) => splitLogLine(l).text)
              .join("\n"),
            12,
          ),
        )
        .catch(() => "");
    }
    return new PodError(
      f.kind,
      lines ? `${f.message}; last log lines:\n  ${lines.split("\n").join("\n  ")}` : f.message,
      { hint: f.hint },
    );
  }

  /** Start `kubectl port-forward` to the running pod; resolves once it listens on every port. */
  async forward(timeoutMs = 30_000): Promise<void> {
    const ready = new Promise<void>((r) => this.forwardReady.push(r));
    this.forwardLoop ??= this.keepForwarding();
    let timer: unknown;
    const ended = this.exited.then(() =>
      Promise.reject(new ReadinessAbortedError("the run ended before the port-forward listened")),
    );
    // Rejects only once the run is over, usually long after the race settled.
    ended.catch(() => {});
    try {
      await Promise.race([
        ready,
        new Promise<never>((_, reject) => {
          timer = this.clock.setTimeout(() => {
            reject(
              new UserError(
                `kubectl port-forward to the Triton pod did not listen on ${this.o.host}:${this.o.ports.http}, ${this.o.ports.grpc} and ${this.o.ports.metrics} within ${Math.round(timeoutMs / 1000)} s${this.forwardError ? `: ${this.forwardError}` : ""}`,
                {
                  hint: /address already in use|unable to listen/i.test(this.forwardError ?? "")
                    ? "Another program holds one of these ports; stop it or choose others with --http-port/--grpc-port/--metrics-port."
                    : `Try \`kubectl --context ${this.o.context} -n ${this.o.namespace} port-forward pod/POD ${this.o.ports.http}:8000\` yourself.`,
                },
              ),
            );
          }, timeoutMs);
        }),
        ended,
      ]);
    } finally {
      this.clock.clearTimeout(timer);
    }
  }

  private forwardError: string | undefined;

  private async runningPod(): Promise<string | undefined> {
    for (;;) {
      if (this.stopping) return undefined;
      const s = this.last;
      if (s?.ok) {
        const o = this.outcomeOf(s.pods);
        if (o.state === "running") return o.pod;
      }
      await this.nextSnapshot();
    }
  }

  private async keepForwarding(): Promise<void> {
    let backoff = 500;
    while (!this.stopping) {
      const pod = await this.runningPod();
      if (!pod || this.stopping) return;
      const started = this.now();
      this.forwarded.clear();
      const child = this.o.tools.spawn(
        "kubectl",
        [
          `--context=${this.o.context}`,
          ...portForwardArgs({ namespace: this.o.namespace, host: this.o.host, pod, ports: this.o.ports }),
        ],
        (line, stream) => {
          const port = forwardedPort(line);
          if (port !== undefined) {
            this.forwarded.add(port);
            if ([this.o.ports.http, this.o.ports.grpc, this.o.ports.metrics].every((p) => this.forwarded.has(p))) {
              this.listened = true;
              for (const r of this.forwardReady.splice(0)) r();
            }
          } else if (stream === "stderr") {
            this.forwardError = line.trim();
            log.debug("port-forward", { line });
          }
        },
      );
      this.forwarder = child;
      const e = await child.exited;
      if (this.forwarder === child) this.forwarder = undefined;
      if (e.error instanceof UserError) {
        this.forwardError = e.error.message;
        log.warn("kubectl port-forward cannot run", { error: e.error.message });
      }
      if (this.stopping) return;
      log.info("kubectl port-forward ended; starting it again once the pod runs", {
        code: e.code,
        signal: e.signal,
        stderr: lastLines(e.stderr, 2),
      });
      backoff = this.now() - started > 10_000 ? 500 : Math.min(backoff * 2, 5_000);
      await this.delay(backoff);
    }
  }

  /** The container whose log to follow: it exists (running, or ended and waiting for a restart). */
  private async loggablePod(): Promise<{ pod: string; restarts: number } | undefined> {
    for (;;) {
      if (this.stopping) return undefined;
      const pod = this.last?.ok ? currentPod(this.last.pods) : undefined;
      const cs = pod?.status?.containerStatuses?.find((c) => c.name === CONTAINER_NAME);
      if (pod && cs && (cs.state?.running || cs.state?.terminated || cs.lastState?.terminated))
        return { pod: pod.metadata.name, restarts: cs.restartCount ?? 0 };
      await this.nextSnapshot();
    }
  }

  private write(line: string): void {
    const { ts, raw, text } = splitLogLine(line.replace(/\r$/, ""));
    // --since-time has whole-line precision at best; lines already written are skipped.
    if (ts && this.cursor && compareTimestamps(ts, this.cursor) <= 0) return;
    if (ts && raw) {
      this.cursor = ts;
      this.cursorRaw = raw;
    }
    this.out?.write(text + "\n");
    this.o.onLogLine?.(text);
  }

  private async followLoop(): Promise<void> {
    let followed: { pod: string; restarts: number } | undefined;
    let backoff = 500;
    while (!this.stopping) {
      const target = await this.loggablePod();
      if (!target || this.stopping) return;
      // The container was restarted since we followed it: the end of the crashed one's log
      // (after our position) comes from --previous before the new one's.
      if (followed && followed.pod === target.pod && target.restarts > followed.restarts && this.cursorRaw) {
        const prev = await this.o.tools
          .kubectl(
            this.o.context,
            logArgs({
              namespace: this.o.namespace,
              pod: target.pod,
              follow: false,
              previous: true,
              since: this.cursorRaw,
            }),
            { timeoutMs: 15_000 },
          )
          .catch(() => "");
        for (const l of prev.split("\n")) if (l) this.write(l);
      }
      followed = target;
      const started = this.now();
      const child = this.o.tools.spawn(
        "kubectl",
        [
          `--context=${this.o.context}`,
          ...logArgs({
            namespace: this.o.namespace,
            pod: target.pod,
            follow: true,
            ...(this.cursorRaw ? { since: this.cursorRaw } : {}),
          }),
        ],
        (line, stream) => {
          if (stream === "stdout") this.write(line);
          else log.debug("logs", { line });
        },
      );
      this.follow = child;
      await child.exited;
      if (this.follow === child) this.follow = undefined;
      if (this.stopping) return;
      backoff = this.now() - started > 10_000 ? 500 : Math.min(backoff * 2, 5_000);
      // Wait for the pod to change (restart, replacement) rather than spinning on a waiting container.
      await this.delay(backoff);
    }
  }

  private saveCursorSync(): void {
    if (!this.cursorRaw) return;
    try {
      fs.writeFileSync(cursorFile(this.o.runDir), this.cursorRaw + "\n");
    } catch {
      // the next follower then starts from the present
    }
  }

  private delays = new Set<() => void>();

  /** A pause that ends early when the connection stops, so no timer outlives it. */
  private delay(ms: number): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.clock.clearTimeout(t);
        this.delays.delete(done);
        resolve();
      };
      const t = this.clock.setTimeout(done, ms);
      this.delays.add(done);
    });
  }

  private halt(): void {
    this.stopping = true;
    for (const d of [...this.delays]) d();
    this.clock.clearInterval(this.timer);
    this.forwarder?.kill();
    this.follow?.kill();
    for (const w of this.waiters.splice(0)) w();
  }

  private exit: Exit | undefined;

  private async end(e: Exit): Promise<void> {
    if (this.stopping) return;
    this.exit = e;
    await this.stop();
  }

  /** Stop everything this connection runs; the log position is kept for whoever follows next. */
  async stop(): Promise<void> {
    if (this.released) return;
    const first = !this.stopping;
    this.halt();
    if (!first) return;
    const children = [this.forwarder, this.follow].filter((c): c is Child => !!c);
    await within(Promise.all(children.map((c) => c.exited)), 5_000, this.clock);
    for (const c of children) c.kill("SIGKILL");
    await within(Promise.allSettled([this.forwardLoop, this.logLoop]), 2_000, this.clock);
    this.saveCursorSync();
    await new Promise<void>((r) => (this.out ? this.out.end(r) : r()));
    this.resolveExit(this.exit ?? { code: null, signal: "SIGTERM" });
  }

  /**
   * Stop at once and record the log position synchronously: a detached `up` hands the
   * connection to its supervisor right after this, which starts its own.
   */
  release(): void {
    if (this.stopping) return;
    this.released = true;
    this.halt();
    this.saveCursorSync();
    this.out?.end();
  }
}

/** The Triton pod cannot start, and waiting will not change that. */
export class PodError extends UserError {
  override name = "PodError";
  constructor(
    readonly kind: string,
    message: string,
    options: { hint?: string },
  ) {
    super(message, options);
  }
}
