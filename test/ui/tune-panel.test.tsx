import { cleanup, render } from "ink-testing-library";
import { afterEach, describe, expect, it } from "vitest";
import { App } from "../../src/ui/components/app.js";
import type { Command } from "../../src/ui/keys.js";
import { applySessionEvent, initialState, type DashboardState } from "../../src/ui/state.js";
import { Store } from "../../src/ui/store.js";
import { ThemeContext } from "../../src/ui/theme.js";
import type { TuneReport } from "../../src/tune/run.js";
import { startEvents, T0 } from "./helpers.js";

afterEach(() => cleanup());
const settle = () => new Promise((r) => setTimeout(r, 20));

function setup() {
  const store = new Store<DashboardState>(startEvents().reduce(applySessionEvent, initialState({ now: T0 })), 0);
  const commands: Command[] = [];
  const ui = render(
    <ThemeContext.Provider value={{ color: false }}>
      <App store={store} onCommand={(c) => commands.push(c)} size={{ columns: 100, rows: 40 }} clock={() => T0} />
    </ThemeContext.Provider>,
  );
  const press = async (input: string) => {
    ui.stdin.write(input);
    await settle();
  };
  return { store, commands, press, frame: () => ui.lastFrame() ?? "" };
}

const candidate = (instances: number) => ({
  batching: true,
  maxBatchSize: 8,
  preferredBatchSize: [],
  maxQueueDelayMicroseconds: 0,
  instances,
});
const report: TuneReport = {
  model: "offset",
  configFile: "/m/offset/config.pbtxt",
  concurrency: 4,
  objective: {},
  space: {
    kind: "KIND_CPU",
    batching: [true],
    maxBatchSize: [8],
    preferredBatchSize: [[]],
    maxQueueDelayMicroseconds: [0],
    instances: [1, 2],
  },
  spaceSize: 2,
  mode: "hill-climb",
  trials: [
    {
      index: 0,
      key: "a",
      candidate: candidate(1),
      status: "ok",
      servedModel: "offset",
      measured: { throughput: 100, p50Us: 9000, p95Us: 12000, p99Us: 15000, errors: 0 },
      elapsedMs: 5000,
    },
    {
      index: 1,
      key: "b",
      candidate: candidate(2),
      status: "ok",
      servedModel: "offset__perf_tune1",
      measured: { throughput: 190, p50Us: 8000, p95Us: 11000, p99Us: 14000, errors: 0 },
      elapsedMs: 5000,
    },
  ],
  ranking: [1, 0],
  pareto: [1],
  winner: 1,
  confirmation: {
    verdict: "confirmed",
    pick: "winner",
    ratio: 0.52,
    band: 0.04,
    winner: 1,
    runnerUp: 0,
    rounds: [
      { winner: 190, runnerUp: 99 },
      { winner: 185, runnerUp: 97 },
      { winner: 192, runnerUp: 100 },
    ],
  },
  diff: [{ field: "instance_group[KIND_CPU].count", before: "1", after: "2" }],
  ended: "converged",
  elapsedMs: 10_000,
  timing: { setupMs: 0, concurrencyMs: 0, cleanupMs: 0, confirmMs: 0 },
};

describe("the dashboard's tune (t)", () => {
  it("asks to tune the selected model, and t again stops a running tune", async () => {
    const { press, commands, frame, store } = setup();
    await press("t");
    expect(commands).toEqual([{ type: "tune", model: "offset" }]);
    expect(frame()).toContain("Press t to tune the selected model");
    store.update((s) => ({
      ...s,
      tune: {
        status: "running",
        model: "offset",
        progress: ["[1/16] mbs=8 no-batching inst=1 (your config)"],
        startedAt: T0,
      },
    }));
    await settle();
    expect(frame()).toContain("Tune: offset");
    expect(frame()).toContain("[1/16] mbs=8 no-batching inst=1 (your config)");
    await press("t");
    expect(commands[1]).toEqual({ type: "cancel-tune" });
  });

  it("shows the winner as a diff of the user's config and the ranked candidates", async () => {
    const { store, frame } = setup();
    store.update((s) => ({
      ...s,
      ui: { ...s.ui, view: "tune" },
      tune: { status: "done", model: "offset", progress: [], report },
    }));
    await settle();
    const f = frame();
    expect(f).toContain("offset: 2 of 2 candidates measured at concurrency 4");
    expect(f).toContain("-  instance_group[KIND_CPU].count: 1");
    expect(f).toContain("+  instance_group[KIND_CPU].count: 2");
    expect(f).toMatch(/1\s+2 inst, batch<=8 pref\[\] delay 0us\s+190/);
    expect(f).toMatch(/winner, pareto/);
    expect(f).toContain("side by side (190.0/99.0, 185.0/97.0, 192.0/100.0 infer/s): confirmed: b led 3/3 rounds");
  });
});
