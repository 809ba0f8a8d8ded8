import { describe, expect, it } from "vitest";
import { UserError } from "../../../../src/errors.js";
import { FakeClock } from "../../../../src/fake-clock.js";
import { PodError } from "../../../../src/runtimes/clients/kubectl/connection.js";
import { podServing } from "../../../../src/runtimes/clients/kubectl/pod-readiness.js";
import { KubectlTools, type Child, type RunOptions } from "../../../../src/runtimes/clients/kubectl/tools.js";
import { ReadinessAbortedError, ReadinessTimeoutError, waitFor } from "../../../../src/triton/readiness.js";
import { scriptedConnection } from "./scripted-connection.js";

const PORTS = { http: 18000, grpc: 18001, metrics: 18002 };

/**
 * kubectl's answers, scripted: `pods` is what `get` lists now; a `port-forward` says it listens on
 * the run's ports as kubectl does (or fails, when `forwardFails`), and runs until killed.
 */
class ScriptedCluster extends KubectlTools {
  pods: unknown[] = [];
  forwards: string[][] = [];
  forwardFails = false;
  constructor() {
    super(undefined, {});
  }
  override async kubectl(_context: string, args: string[], _o: RunOptions = {}): Promise<string> {
    if (args.includes("logs")) return "2026-01-01T00:00:01.000000000Z E1129 model.py:3] boom\n";
    return JSON.stringify({ kind: "List", items: [{ kind: "Deployment", metadata: { name: "d" } }, ...this.pods] });
  }
  override spawn(_tool: string, args: string[], onLine: (line: string, stream: "stdout" | "stderr") => void): Child {
    let end!: () => void;
    const exited = new Promise<{ code: number | undefined; signal: string | undefined; stderr: string }>(
      (r) => (end = () => r({ code: undefined, signal: "SIGTERM", stderr: "" })),
    );
    if (args.includes("port-forward")) {
      this.forwards.push(args);
      queueMicrotask(() => {
        if (this.forwardFails) onLine("Unable to listen on port 18000: address already in use", "stderr");
        else for (const p of Object.values(PORTS)) onLine(`Forwarding from 127.0.0.1:${p} -> 8000`, "stdout");
      });
    }
    return { pid: undefined, process: undefined as never, exited, kill: () => end() };
  }
}

const pod = (containerState: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  kind: "Pod",
  metadata: { name: "triton-abc", creationTimestamp: "2026-01-01T00:00:00Z" },
  status: { phase: "Running", containerStatuses: [{ name: "triton", restartCount: 0, ...containerState, ...extra }] },
});

function setUp() {
  const tools = new ScriptedCluster();
  const clock = new FakeClock();
  const connection = scriptedConnection(tools, clock, PORTS);
  const steps: string[] = [];
  let live = false;
  const liveAsked: boolean[] = [];
  const strategy = podServing({
    connection,
    client: { isLive: async () => (liveAsked.push(live), live) },
    where: "kind cluster c",
    host: "127.0.0.1",
    ports: PORTS,
    progress: (step, message) => steps.push(`${step}: ${message}`),
    failure: (err) =>
      err instanceof ReadinessAbortedError && err.cause instanceof PodError
        ? err.cause
        : new UserError(`mapped: ${(err as Error).message}`),
    podHint: "describe the pod",
  });
  return { tools, clock, connection, strategy, steps, liveAsked, setLive: (v: boolean) => (live = v) };
}

describe("podServing: the readiness of a run in a pod", () => {
  it("holds only once the pod runs, the port-forward listens and Triton answers live through it", async () => {
    const w = setUp();
    w.tools.pods = [pod({ state: { waiting: { reason: "ContainerCreating" } } })];
    await w.connection.start();
    expect(await w.strategy.check()).toBe(false);
    expect(w.strategy.description).toMatch(/^the Triton pod in kind cluster c/);
    expect(w.strategy.timeoutHint).toBe("describe the pod");
    expect(w.tools.forwards).toEqual([]);

    w.tools.pods = [pod({ state: { running: {} }, started: true })];
    await w.clock.advance(1_000);
    // The first check that sees it running starts the port-forward; Triton is not asked before it listens.
    expect(await w.strategy.check()).toBe(false);
    expect(w.tools.forwards).toHaveLength(1);
    expect(w.tools.forwards[0]).toEqual(expect.arrayContaining(["port-forward", "pod/triton-abc", "18000:8000"]));
    expect(w.steps.at(-1)).toMatch(/^forward: port-forwarding 127\.0\.0\.1:18000, 18001, 18002 to pod triton-abc/);
    await new Promise((r) => setImmediate(r));
    expect(await w.strategy.check()).toBe(false);
    expect(w.liveAsked).toEqual([false]);
    w.setLive(true);
    expect(await w.strategy.check()).toBe(true);
    expect(w.connection.listening).toBe(true);
    expect(w.strategy.description).toMatch(/^Triton in pod triton-abc, through kubectl port-forward/);
    expect(w.strategy.timeoutHint).toBeUndefined();
    expect(w.tools.forwards).toHaveLength(1);
    await w.connection.stop();
  });

  it("a pod that crashes ends the wait at once with the pod's own error, not a timeout", async () => {
    const w = setUp();
    w.tools.pods = [
      pod(
        { state: { waiting: { reason: "CrashLoopBackOff" } } },
        { restartCount: 2, lastState: { terminated: { exitCode: 1, reason: "Error" } } },
      ),
    ];
    await w.connection.start();
    const err = await waitFor(w.strategy, { timeoutMs: 60_000, clock: w.clock }).catch((e: unknown) => e);
    await w.connection.stop();
    expect(err).toBeInstanceOf(PodError);
    expect((err as Error).message).toMatch(
      /keeps exiting \(exit code 1; restarted 2 time\(s\)\); last log lines:\n {2}E1129/,
    );
    expect(w.connection.listening).toBe(false);
  });

  it("times out on the waiter's clock, saying what the pod waits for and where to look", async () => {
    const w = setUp();
    w.tools.pods = [pod({ state: { waiting: { reason: "ContainerCreating" } } })];
    await w.connection.start();
    const waiting = waitFor(w.strategy, { timeoutMs: 30_000, intervalMs: 250, clock: w.clock }).catch(
      (e: unknown) => e,
    );
    await w.clock.sleeping();
    await w.clock.advance(31_000);
    const err = await waiting;
    await w.connection.stop();
    expect(err).toBeInstanceOf(ReadinessTimeoutError);
    expect((err as ReadinessTimeoutError).message).toMatch(
      /^the Triton pod in kind cluster c \(.+\) not ready after 30 s$/,
    );
    expect((err as ReadinessTimeoutError).hint).toBe("describe the pod");
    expect(w.steps[0]).toMatch(/^pod: /);
  });

  it("a port-forward that cannot listen ends the wait with its own error", async () => {
    const w = setUp();
    w.tools.forwardFails = true;
    w.tools.pods = [pod({ state: { running: {} }, started: true })];
    await w.connection.start();
    const waiting = waitFor(w.strategy, { timeoutMs: 120_000, intervalMs: 250, clock: w.clock }).catch(
      (e: unknown) => e,
    );
    // The port-forward's own limit (30 s) comes before the run's.
    for (let i = 0; i < 130 && !(await isSettled(waiting)); i++) await w.clock.advance(250);
    const err = await waiting;
    await w.connection.stop();
    expect(err).toBeInstanceOf(UserError);
    expect((err as Error).message).toMatch(
      /port-forward to the Triton pod did not listen .* within 30 s: Unable to listen/,
    );
    expect((err as UserError).hint).toMatch(/Another program holds one of these ports/);
  });

  it("a blocker that rejects (a first copy that failed) ends the wait with its error", async () => {
    const w = setUp();
    w.tools.pods = [pod({ state: { waiting: { reason: "PodInitializing" } } })];
    await w.connection.start();
    const copyFailed = new UserError("could not copy the models into the pod");
    const strategy = podServing({
      connection: w.connection,
      client: { isLive: async () => true },
      where: "context ctx",
      host: "127.0.0.1",
      ports: PORTS,
      progress: () => {},
      failure: (e) => e,
      blocker: Promise.reject(copyFailed),
      podHint: "",
    });
    await new Promise((r) => setImmediate(r));
    await expect(strategy.check()).rejects.toBe(copyFailed);
    await w.connection.stop();
  });
});

async function isSettled(p: Promise<unknown>): Promise<boolean> {
  return Promise.race([p.then(() => true), new Promise<boolean>((r) => setImmediate(() => r(false)))]);
}
