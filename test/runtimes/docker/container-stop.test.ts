import { PassThrough } from "node:stream";
import type Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { FakeClock } from "../../../src/fake-clock.js";
import { stopTritonContainer } from "../../../src/runtimes/docker/container-stop.js";

/** The daemon's side of one container, scripted: it runs until killed; its log is what the test writes. */
function scriptedContainer() {
  const log = new PassThrough();
  const c = {
    running: true,
    signals: [] as string[],
    log,
    container: {
      inspect: async () => ({ State: { Running: c.running, Restarting: false } }),
      kill: async ({ signal }: { signal: string }) => {
        c.signals.push(signal);
        if (signal === "SIGKILL") c.running = false;
      },
      stop: async () => {
        c.running = false;
      },
      logs: async () => log,
      // The log stream is plain text here: no multiplexing headers to take apart.
      modem: { demuxStream: (raw: PassThrough, out: PassThrough) => raw.pipe(out) },
    } as unknown as Docker.Container,
  };
  return c;
}

/** Moves the fake clock on whenever the stop waits on it, until it returns (bounded in steps). */
async function runOnClock<T>(p: Promise<T>, clock: FakeClock, stepMs = 100): Promise<T> {
  let done = false;
  void p.then(() => (done = true));
  for (let steps = 0; steps < 1_000 && !done; steps++) {
    await Promise.race([clock.waiting(), p]);
    if (!done) await clock.advance(stepMs);
  }
  return p;
}

const loaded = async () => [{ name: "m", version: "1", state: "READY" }];

describe("stopTritonContainer on a clock", () => {
  it("kills a container that does not exit within the grace time, without waiting it out", async () => {
    const clock = new FakeClock();
    const c = scriptedContainer();
    const started = clock.now();
    const outcome = await runOnClock(stopTritonContainer(c.container, { graceMs: 15_000, loaded, clock }), clock);
    expect(outcome.ended).toBe("killed");
    expect(c.signals).toEqual(["SIGTERM", "SIGKILL"]);
    expect(clock.now() - started).toBeGreaterThanOrEqual(15_000);
    expect(clock.pending).toBe(0);
  });

  it("kills it once everything loaded at the start has unloaded and the settle time passed", async () => {
    const clock = new FakeClock();
    const c = scriptedContainer();
    const stopping = stopTritonContainer(c.container, { graceMs: 15_000, loaded, settleMs: 250, clock });
    await clock.waiting();
    // Dated on real time (the daemon's clock): lines from before the stop are dropped.
    c.log.write(
      `${new Date(Date.now() + 1000).toISOString()} I1129 model_lifecycle.cc:1] successfully unloaded 'm' version 1\n`,
    );
    const started = clock.now();
    const outcome = await runOnClock(stopping, clock);
    expect(outcome.ended).toBe("unloaded");
    expect(c.signals).toEqual(["SIGTERM", "SIGKILL"]);
    expect(clock.now() - started).toBeLessThan(1_000);
  });
});
