import { describe, expect, it } from "vitest";
import { FakeClock } from "../../../../src/fake-clock.js";
import { deleteRunObjects } from "../../../../src/runtimes/clients/kubectl/delete-run.js";
import { KubectlTools, type Child, type RunOptions } from "../../../../src/runtimes/clients/kubectl/tools.js";

/** kubectl's answers, scripted, and the pods' log followers, fed by the test: the cluster side without a cluster. */
class ScriptedTools extends KubectlTools {
  calls: string[][] = [];
  logLine: (line: string) => void = () => {};
  constructor(private readonly answer: (args: string[]) => string) {
    super(undefined, {});
  }
  override async kubectl(_context: string, args: string[], _o: RunOptions = {}): Promise<string> {
    this.calls.push(args);
    return this.answer(args);
  }
  override spawn(_tool: string, _args: string[], onLine: (line: string, stream: "stdout" | "stderr") => void): Child {
    this.logLine = (line) => onLine(line, "stdout");
    let end!: () => void;
    const exited = new Promise<{ code: number | undefined; signal: string | undefined; stderr: string }>(
      (r) => (end = () => r({ code: undefined, signal: "SIGTERM", stderr: "" })),
    );
    return { pid: undefined, process: undefined as never, exited, kill: () => end() };
  }
}

const target = (clock: FakeClock) => ({
  context: "kind-c",
  namespace: "triton-dev",
  selector: "triton-dev/run=r1",
  kinds: ["deployments", "services"],
  graceMs: 15_000,
  clock,
});

const isPodList = (args: string[]) => args.includes("get") && args.includes("pods");

/** Moves the fake clock on whenever the deletion waits on it, until it returns (bounded in steps). */
async function runOnClock<T>(p: Promise<T>, clock: FakeClock, stepMs = 200): Promise<{ value: T; steps: number }> {
  let value: T | undefined;
  let done = false;
  void p.then((v) => {
    value = v;
    done = true;
  });
  let steps = 0;
  for (; steps < 1_000 && !done; steps++) {
    await Promise.race([clock.waiting(), p]);
    if (!done) await clock.advance(stepMs);
  }
  await p;
  return { value: value as T, steps };
}

describe("deleteRunObjects on a clock", () => {
  it("waits for the pod to go, polling on the clock", async () => {
    const clock = new FakeClock();
    let polls = 0;
    const tools = new ScriptedTools((args) => (isPodList(args) ? (++polls < 3 ? "pod/triton-abc\n" : "") : ""));
    const { value } = await runOnClock(deleteRunObjects(tools, target(clock)), clock);
    expect(value.ended).toBe("exited");
    expect(polls).toBe(3);
    expect(tools.calls[0]).toEqual(expect.arrayContaining(["delete", "deployments,services", "--wait=true"]));
    expect(clock.pending).toBe(0);
  });

  it("gives up on a pod still terminating after its grace period and 30 s more, without waiting them out", async () => {
    const clock = new FakeClock();
    const started = clock.now();
    const tools = new ScriptedTools((args) => (isPodList(args) ? "pod/triton-abc\n" : ""));
    await runOnClock(deleteRunObjects(tools, target(clock)), clock);
    expect(clock.now() - started).toBeGreaterThanOrEqual(45_000);
    expect(clock.now() - started).toBeLessThan(45_000 + 400);
    expect(clock.pending).toBe(0);
  });

  it("force-deletes the pod once everything loaded at the start has unloaded and the settle time passed", async () => {
    const clock = new FakeClock();
    let forced = false;
    const tools = new ScriptedTools((args) => {
      if (args.includes("--force")) forced = true;
      return isPodList(args) ? (forced ? "" : "pod/triton-abc\n") : "";
    });
    const stopping = deleteRunObjects(tools, target(clock), {
      loaded: [{ name: "m", version: "1", state: "READY" }],
      settleMs: 250,
    });
    // The pod's log follower starts once the pods are listed. Its lines are dated on real time
    // (the pod's clock), and lines from before the stop are dropped.
    await clock.waiting();
    tools.logLine(
      `${new Date(Date.now() + 1000).toISOString()} I1129 model_lifecycle.cc:1] successfully unloaded 'm' version 1`,
    );
    expect(forced).toBe(false);
    const { value } = await runOnClock(stopping, clock);
    expect(forced).toBe(true);
    expect(value.ended).toBe("unloaded");
  });
});
