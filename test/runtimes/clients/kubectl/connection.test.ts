import { describe, expect, it } from "vitest";
import { FakeClock } from "../../../../src/fake-clock.js";
import { PodConnection, PodError } from "../../../../src/runtimes/clients/kubectl/connection.js";
import { KubectlTools, type Child, type RunOptions } from "../../../../src/runtimes/clients/kubectl/tools.js";
import { ReadinessAbortedError } from "../../../../src/triton/readiness.js";
import { scriptedConnection } from "./scripted-connection.js";

/** kubectl's answers, scripted: the cluster side of the connection, without a cluster. */
class ScriptedTools extends KubectlTools {
  calls: string[][] = [];
  constructor(private readonly answer: (args: string[]) => string) {
    super(undefined, {});
  }
  override async kubectl(_context: string, args: string[], _o: RunOptions = {}): Promise<string> {
    this.calls.push(args);
    return this.answer(args);
  }
  /** A long-running kubectl that runs until killed. */
  override spawn(): Child {
    let end!: () => void;
    const exited = new Promise<{ code: number | undefined; signal: string | undefined; stderr: string }>(
      (r) => (end = () => r({ code: undefined, signal: "SIGTERM", stderr: "" })),
    );
    return { pid: undefined, process: undefined as never, exited, kill: () => end() };
  }
}

const list = (...items: unknown[]) => JSON.stringify({ kind: "List", items });
const deployment = { kind: "Deployment", metadata: { name: "triton-inference-server" } };
const crashing = {
  kind: "Pod",
  metadata: { name: "triton-inference-server-abc", creationTimestamp: "2026-01-01T00:00:00Z" },
  status: {
    phase: "Running",
    containerStatuses: [
      {
        name: "triton",
        restartCount: 1,
        state: { waiting: { reason: "CrashLoopBackOff" } },
        lastState: { terminated: { exitCode: 1, reason: "Error" } },
      },
    ],
  },
};

/**
 * Polls on the fake clock, one poll interval (the default second) at a time, until the run ends;
 * the end's last step (closing the log file) is real I/O, so the exit itself is awaited.
 */
async function pollUntilExit(c: PodConnection, clock: FakeClock) {
  let ended = false;
  void c.exited.then(() => (ended = true));
  for (let i = 0; i < 5 && !ended; i++) await clock.advance(1_000);
  return c.exited;
}

describe("PodConnection", () => {
  it("turns a crash loop into a PodError carrying the crashed container's last lines", async () => {
    const tools = new ScriptedTools((args) =>
      args.includes("logs")
        ? "2026-01-01T00:00:01.000000000Z E1129 model.py:3] boom\n2026-01-01T00:00:02.000000000Z bye\n"
        : list(deployment, crashing),
    );
    const c = scriptedConnection(tools);
    await c.start();
    const err = await c.runningNow().catch((e: unknown) => e);
    await c.stop();
    expect(err).toBeInstanceOf(ReadinessAbortedError);
    const cause = (err as Error).cause;
    expect(cause).toBeInstanceOf(PodError);
    expect((cause as Error).message).toBe(
      "tritonserver in pod triton-inference-server-abc keeps exiting (exit code 1; restarted 1 time(s)); last log lines:\n  E1129 model.py:3] boom\n  bye",
    );
    const logCall = tools.calls.find((a) => a.includes("logs"))!;
    expect(logCall).toEqual(expect.arrayContaining(["pod/triton-inference-server-abc", "--previous", "--tail=12"]));
  });

  it("ends the run when the Deployment is gone (twice in a row), and stop() is safe after that", async () => {
    let gone = false;
    const tools = new ScriptedTools(() => (gone ? list() : list(deployment)));
    const clock = new FakeClock();
    const c = scriptedConnection(tools, clock);
    await c.start();
    gone = true;
    // One poll without the Deployment is not enough (an apply in progress can list none).
    await clock.advance(1_000);
    expect(tools.calls.filter((a) => a.includes("get"))).toHaveLength(2);
    expect(await pollUntilExit(c, clock)).toEqual({ code: null, signal: "SIGTERM" });
    expect(tools.calls.filter((a) => a.includes("get"))).toHaveLength(3);
    await c.stop();
  });

  it("ends the run when the cluster's context disappeared (kind delete cluster)", async () => {
    const { ToolCommandError } = await import("../../../../src/runtimes/clients/kubectl/tools.js");
    let deleted = false;
    const tools = new ScriptedTools((args) => {
      if (deleted) throw new ToolCommandError("kubectl", args, 1, 'error: context "kind-c" does not exist');
      return list(deployment);
    });
    const clock = new FakeClock();
    const c = scriptedConnection(tools, clock);
    await c.start();
    deleted = true;
    expect(await pollUntilExit(c, clock)).toEqual({ code: null, signal: "SIGTERM" });
  });
});
