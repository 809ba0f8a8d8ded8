import { render } from "ink-testing-library";
import { afterEach, describe, expect, it } from "vitest";
import { cleanup } from "ink-testing-library";
import { resolveInputs } from "../../src/perf/inputs.js";
import type { PerfOptions } from "../../src/perf/run.js";
import { App } from "../../src/ui/components/app.js";
import { PerfRunner } from "../../src/ui/controllers/perf-runner.js";
import type { Command } from "../../src/ui/keys.js";
import { applySessionEvent, initialState, summariseConfig, type DashboardState } from "../../src/ui/state.js";
import { Store } from "../../src/ui/store.js";
import { ThemeContext } from "../../src/ui/theme.js";
import { DIMS_ERROR, perfReport, startEvents, streamPerfReport, T0 } from "./helpers.js";

afterEach(() => cleanup());

const settle = () => new Promise((r) => setTimeout(r, 20));

// ink-testing-library's terminal is 100 columns wide.
function setup(size = { columns: 100, rows: 40 }, onCommand?: (c: Command) => void) {
  const store = new Store<DashboardState>(initialState({ now: T0 }), 0);
  const commands: Command[] = [];
  const ui = render(
    <ThemeContext.Provider value={{ color: false }}>
      <App
        store={store}
        onCommand={(c) => {
          commands.push(c);
          onCommand?.(c);
        }}
        size={size}
        clock={() => T0}
      />
    </ThemeContext.Provider>,
  );
  const feed = async (...events: Parameters<typeof applySessionEvent>[1][]) => {
    for (const e of events) store.update((s) => applySessionEvent(s, e));
    await settle();
  };
  const update = async (f: (s: DashboardState) => DashboardState) => {
    store.update(f);
    await settle();
  };
  const frame = () => ui.lastFrame() ?? "";
  const press = async (input: string) => {
    ui.stdin.write(input);
    await settle();
  };
  return { store, commands, ui, feed, update, frame, press };
}

describe("the dashboard", () => {
  it("shows each model's version and state, and follows a reload to the new version", async () => {
    const { feed, frame, update } = setup();
    await feed(...startEvents());
    await update((s) => ({
      ...s,
      models: s.models.map((m) =>
        m.name === "offset"
          ? {
              ...m,
              config: summariseConfig({
                platform: "",
                backend: "python",
                max_batch_size: 8,
                dynamic_batching: { preferred_batch_size: [4, 8], max_queue_delay_microseconds: "500" },
                instance_group: [{ count: 2, kind: "KIND_CPU" }],
              }),
            }
          : m,
      ),
    }));
    expect(frame()).toMatch(/offset\s+v1\s+READY\s+dynamic ≤8 \[4,8\] 500 µs\s+2×CPU/);
    expect(frame()).toMatch(/tokenizer\s+v1\s+READY/);
    expect(frame()).toContain("HTTP 127.0.0.1:8000");

    await feed({ type: "edit", id: 1, model: "offset", phase: "loading", at: T0 + 1000, sinceSavedMs: 120 });
    expect(frame()).toMatch(/offset\s+v1\s+READY.*reloading…/);
    await feed({
      type: "edit",
      id: 1,
      model: "offset",
      phase: "ready",
      at: T0 + 1450,
      sinceSavedMs: 450,
      version: "2",
    });
    expect(frame()).toMatch(/offset\s+v2\s+READY.*0\.45 s/);
    expect(frame()).toMatch(/#1 offset READY v2 in 0\.45 s/);
  });

  it("shows a refused edit with the diagnostic, and every detail on enter", async () => {
    const { feed, frame, press } = setup();
    await feed(...startEvents());
    await feed({
      type: "edit",
      id: 2,
      model: "offset",
      phase: "refused",
      at: T0 + 2000,
      sinceSavedMs: 30,
      diagnostics: [DIMS_ERROR, { ...DIMS_ERROR, line: 5, message: "second problem" }],
      reason: "the last good version keeps serving",
    });
    const f = frame();
    expect(f).toMatch(/#2 offset REFUSED 2 errors/);
    expect(f).toMatch(/offset\/config\.pbtxt:4:43: dims must be >=[\s│]*1 or -1 \(variable\), got 0/);
    expect(f).toMatch(/▸ 1 more/);
    expect(f).toMatch(/offset\s+v1\s+READY.*refused/);
    await press("\r");
    const d = frame();
    expect(d).toContain("Details: offset");
    expect(d).toContain("config.pbtxt:5:43: second problem");
    expect(d).toContain("hint: Use a positive size");
    expect(d).toContain("the last good version keeps serving");
  });

  it("shows a perf result as a table, the best figure and the chart", async () => {
    const { update, frame, feed } = setup();
    await feed(...startEvents());
    await update((s) => ({
      ...s,
      ui: { ...s.ui, view: "perf" },
      perf: {
        status: "done",
        model: "offset",
        plan: "concurrency 1,2,3,4, 1 s windows",
        progress: [],
        report: perfReport(),
      },
    }));
    const f = frame();
    expect(f).toContain("Perf: offset");
    expect(f).toMatch(/│4\s+1735\s+2\.10\s+3\.36\s+4\.20/);
    expect(f).toMatch(/best 1735 infer\/s at concurrency 4, p99 4\.20 ms/);
    expect(f).toContain("throughput (infer/s)");
  });

  it("shows a decoupled model's perf result with its streaming columns: responses, TTFT, ITL, errors", async () => {
    const { update, frame, feed } = setup();
    await feed(...startEvents());
    await update((s) => ({
      ...s,
      ui: { ...s.ui, view: "perf" },
      perf: {
        status: "done",
        model: "text_streamer",
        plan: "concurrency 1,2, 1 s windows",
        progress: [],
        report: streamPerfReport(),
      },
    }));
    const f = frame();
    expect(f).toMatch(/conc\s+req\/s\s+resp\/s\s+r\/req\s+ttft50\s+ttft99\s+itl50\s+itl99\s+p99\s+out\/s\s+errors/);
    // concurrency 2: 70 req/s, 840 resp/s, 12 per request, TTFT p50 4 ms / p99 5.6 ms, ITL 0.5 / 0.7 ms, 3 errors.
    expect(f).toMatch(/│2\s+70\.00\s+840\.0\s+12\.0\s+4\.00\s+5\.60\s+0\.50\s+0\.70\s+12\.0\s+1680\s+3\s/);
    expect(f).toMatch(/best 840\.0 responses\/s at concurrency 2, 70\.00 requests\/s, first response p99 5\.60 ms/);
    expect(f).not.toMatch(/queue\s+infer\s+batch/);
    // The chart's points are requests per second, not inferences.
    expect(f).toMatch(/throughput \(requests\/s\)/);
    expect(f).not.toMatch(/infer\/s/);
  });

  it("turns keys into view changes and commands", async () => {
    const { feed, frame, press, commands } = setup();
    await feed(...startEvents());
    await press("j");
    expect(frame()).toMatch(/> tokenizer/);
    await press("r");
    expect(commands).toEqual([{ type: "reload", model: "tokenizer" }]);
    expect(frame()).toContain("reloading tokenizer");
    await press("p");
    expect(commands[1]).toEqual({ type: "perf", model: "tokenizer" });
    expect(frame()).toContain("Perf");
    await press("?");
    expect(frame()).toContain("quick perf check of the selected model");
    await press("x");
    await press("/");
    await press("tok");
    expect(frame()).toContain("/ filter models: tok");
    await press("\r");
    expect(frame()).toMatch(/filter "tok": 1\/2/);
    expect(frame()).not.toMatch(/> offset|  offset\s+v1/);
    await press("q");
    expect(commands[commands.length - 1]).toEqual({ type: "quit" });
  });

  it("asks for the shapes a dynamic model needs at a prompt, and remembers them for the model", async () => {
    // The real input resolution decides what is missing; only the server's answer is stood in for.
    const metadata = {
      name: "offset",
      platform: "python",
      inputs: [
        { name: "INPUT0", datatype: "FP32", shape: [-1, -1] },
        { name: "INPUT1", datatype: "FP32", shape: [-1, -1] },
      ],
      outputs: [],
    };
    const calls: PerfOptions[] = [];
    const late: { runner?: PerfRunner } = {};
    const { store, feed, frame, press, commands } = setup(undefined, (c) => {
      if (c.type === "perf") late.runner!.start(c.model, c.shapes);
    });
    const runner = new PerfRunner({
      store,
      env: {},
      now: () => T0,
      runPerf: async (o) => {
        calls.push(o);
        resolveInputs(
          metadata,
          { max_batch_size: 0 },
          { batchSize: 1, shapes: o.shapes, optional: new Set(["INPUT1"]) },
        );
        return perfReport(o.model);
      },
    });
    late.runner = runner;
    const typeKeys = async (text: string) => {
      for (const ch of text) await press(ch);
    };
    const run = async (key: string) => {
      await press(key);
      await runner.close();
      await settle();
    };
    await feed(...startEvents());
    await run("p");
    expect(calls[0]!.shapes).toEqual({});
    expect(frame()).toContain("shapes for offset:");
    expect(frame()).toContain("INPUT0 [-1,-1]");
    expect(frame()).not.toContain("INPUT1");
    expect(frame()).not.toContain("--shape");
    await typeKeys("INPUT0=2x");
    await run("\r");
    expect(frame()).toMatch(/shapes for offset: INPUT0=2x .*a shape must look like/);
    expect(calls).toHaveLength(1);
    await typeKeys("3");
    await run("\r");
    expect(calls[1]!.shapes).toEqual({ INPUT0: [2, 3] });
    expect(frame()).not.toContain("shapes for offset:");
    expect(frame()).toMatch(/best 1735 infer\/s/);
    expect(frame()).toContain("shapes INPUT0=2x3");
    // Remembered for offset, for this run: p sends them again; another model gets none.
    await run("p");
    expect(calls[2]!.shapes).toEqual({ INPUT0: [2, 3] });
    await press("j");
    await run("p");
    expect(calls[3]!.model).toBe("tokenizer");
    expect(calls[3]!.shapes).toEqual({});
    await press("\u001b");
    await press("k");
    await press("P");
    expect(frame()).toContain("shapes for offset: INPUT0=2x3");
    await press("\u001b");
    expect(frame()).not.toContain("shapes for offset:");
    expect(commands.filter((c) => c.type === "perf")).toHaveLength(4);
  });

  it("fits a small terminal and says when it is too small", async () => {
    const { feed, frame } = setup({ columns: 70, rows: 20 });
    await feed(...startEvents());
    const lines = frame().split("\n");
    expect(lines.length).toBeLessThanOrEqual(19);
    expect(Math.max(...lines.map((l) => [...l].length))).toBeLessThanOrEqual(70);
    const tiny = setup({ columns: 40, rows: 10 });
    expect(tiny.frame()).toContain("needs 60×16");
  });
});
