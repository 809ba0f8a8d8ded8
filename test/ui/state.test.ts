import { describe, expect, it } from "vitest";
import { handleInput, handleKey } from "../../src/ui/keys.js";
import { sparkline, uptime, wrap } from "../../src/ui/format.js";
import {
  applyIndex,
  applyLogLines,
  applyReadiness,
  applySessionEvent,
  batchingText,
  clockKey,
  initialState,
  MAX_LOG_LINES,
  metricsFingerprint,
  selectedModel,
  summariseConfig,
  tritonLogLine,
  type DashboardState,
} from "../../src/ui/state.js";
import { DIMS_ERROR, startEvents, T0 } from "./helpers.js";
import { runReadiness } from "../../src/triton/run-readiness.js";
import { pullEvent } from "../../src/runtimes/clients/container/pull-event.js";
import { containerEvent, monitoringEvent } from "../../src/runtimes/docker/events.js";

const started = (): DashboardState => startEvents().reduce(applySessionEvent, initialState({ now: T0 }));

describe("a model served through the python backend running its backend's library", () => {
  it("keeps how it is served on the model's row, for the details panel", () => {
    const s = applySessionEvent(started(), {
      type: "adapted",
      model: "bert_large",
      servedAs: "served through ONNX Runtime 1.20 in the python backend (local runtime)",
    });
    expect(s.models.find((m) => m.name === "bert_large")?.servedAs).toBe(
      "served through ONNX Runtime 1.20 in the python backend (local runtime)",
    );
  });
});

describe("the dashboard's state", () => {
  it("follows an edit through its phases into the model row and the timeline", () => {
    let s = started();
    s = applySessionEvent(s, { type: "edit", id: 7, model: "offset", phase: "saved", at: T0, sinceSavedMs: 0 });
    s = applySessionEvent(s, { type: "edit", id: 7, model: "offset", phase: "loading", at: T0 + 50, sinceSavedMs: 50 });
    expect(s.models.find((m) => m.name === "offset")?.lastEdit?.phase).toBe("loading");
    s = applySessionEvent(s, {
      type: "edit",
      id: 7,
      model: "offset",
      phase: "ready",
      at: T0 + 800,
      sinceSavedMs: 800,
      version: "3",
    });
    const row = s.models.find((m) => m.name === "offset")!;
    expect(row).toMatchObject({
      state: "READY",
      version: "3",
      lastReload: { at: T0 + 800, latencyMs: 800, version: "3" },
    });
    expect(s.timeline).toHaveLength(1);
    expect(s.timeline[0]).toMatchObject({ id: 7, phase: "ready", latencyMs: 800, savedAt: T0 });
    expect(s.timeline[0]!.phases.map((p) => p.phase)).toEqual(["saved", "loading", "ready"]);
  });

  it("keeps a model refused at start listed, and drops one whose folder was deleted", () => {
    let s = startEvents(["offset"]).reduce(
      applySessionEvent,
      applySessionEvent(initialState({ now: T0 }), {
        type: "lint",
        model: "broken",
        diagnostics: [DIMS_ERROR],
        staged: false,
      }),
    );
    s = applySessionEvent(s, {
      type: "edit",
      id: 1,
      model: "broken",
      phase: "refused",
      at: T0,
      sinceSavedMs: 0,
      diagnostics: [DIMS_ERROR],
    });
    s = applyIndex(s, [{ name: "offset", version: "1", state: "READY" }]);
    expect(s.models.map((m) => [m.name, m.state])).toEqual([
      ["broken", "NOT LOADED"],
      ["offset", "READY"],
    ]);
    s = applySessionEvent(s, { type: "edit", id: 2, model: "offset", phase: "unloaded", at: T0, sinceSavedMs: 10 });
    s = applyIndex(s, []);
    expect(s.models.map((m) => m.name)).toEqual(["broken"]);
  });

  it("keeps a withdrawn model's reason whatever the index says, until a fix loads or its folder is deleted", () => {
    let s = started();
    const failed = {
      type: "edit" as const,
      id: 3,
      model: "tokenizer",
      phase: "failed" as const,
      at: T0,
      sinceSavedMs: 900,
      reason: "boom at /home/me/models/tokenizer/1/model.py(6); not loaded until a fix is saved",
      withdrawn: true,
    };
    s = applySessionEvent(s, failed);
    // Triton forgets it (not listed), or lists the placeholder that makes it forget as READY.
    for (const index of [[], [{ name: "tokenizer", version: "1", state: "READY" as const }]]) {
      const t = applyIndex(s, [{ name: "offset", version: "1", state: "READY" }, ...index]);
      expect(t.models.find((m) => m.name === "tokenizer")).toMatchObject({
        state: "UNAVAILABLE",
        reason: failed.reason,
        withdrawn: true,
      });
    }
    const fixed = applySessionEvent(s, { ...failed, id: 4, phase: "ready", reason: undefined, withdrawn: undefined });
    expect(fixed.models.find((m) => m.name === "tokenizer")).toMatchObject({ state: "READY", withdrawn: false });
    const deleted = applyIndex(
      applySessionEvent(s, { ...failed, id: 5, phase: "unloaded", reason: undefined, withdrawn: undefined }),
      [{ name: "offset", version: "1", state: "READY" }],
    );
    expect(deleted.models.map((m) => m.name)).toEqual(["offset"]);
  });

  it("is ready as status is: every served model READY; the others listed as not served", () => {
    let s = started();
    s = applySessionEvent(s, {
      type: "edit",
      id: 3,
      model: "tokenizer",
      phase: "failed",
      at: T0,
      sinceSavedMs: 900,
      reason: "boom",
      withdrawn: true,
    });
    const index = [{ name: "offset", version: "1", state: "READY" as const }];
    const ready = applyReadiness(s, runReadiness({ live: true, tritonReady: true, served: ["offset"], index }), [
      "offset",
    ]);
    expect(ready.server).toMatchObject({ ready: true, waitingFor: [], notServed: ["tokenizer"] });
    const loading = applyReadiness(
      ready,
      runReadiness({
        live: true,
        tritonReady: false,
        served: ["offset"],
        index: [{ name: "offset", version: "1", state: "LOADING" }],
      }),
      ["offset"],
    );
    expect(loading.server).toMatchObject({ ready: false, waitingFor: ["offset is LOADING"] });
    // Nothing changed: the same state, no redraw.
    expect(applyReadiness(loading, { ready: false, waitingFor: ["offset is LOADING"] }, ["offset"])).toBe(loading);
  });

  it("shows the docker runtime's progress while Triton starts, and its hints", () => {
    let s = initialState({ now: T0 });
    s = applySessionEvent(s, { type: "runtime", runtime: "docker", why: "the daemon has the NVIDIA runtime" });
    expect(s.server.message).toBe("docker runtime: the daemon has the NVIDIA runtime");
    s = applySessionEvent(
      s,
      pullEvent("docker", {
        image: "nvcr.io/nvidia/tritonserver:24.10-py3",
        layers: [
          { id: "a", phase: "done" },
          { id: "b", phase: "downloading", current: 1, total: 2 },
        ],
        done: 1,
        downloaded: 2 ** 30,
        size: 4 * 2 ** 30,
        finished: false,
      }),
    );
    expect(s.server.message).toBe("pulling nvcr.io/nvidia/tritonserver:24.10-py3: 1/2 layers, 1.0 GiB of 4.0 GiB");
    s = applySessionEvent(
      s,
      containerEvent({ action: "created", name: "triton-dev-abc", id: "0123456789abcdef", image: "img" }),
    );
    expect(s.server.container).toBe("triton-dev-abc");
    expect(s.server.message).toBe("created container triton-dev-abc");
    s = applySessionEvent(
      s,
      monitoringEvent({ prometheus: "http://127.0.0.1:9090", grafana: "http://127.0.0.1:3000" }),
    );
    expect(s.server.monitoring).toEqual({ prometheus: "http://127.0.0.1:9090", grafana: "http://127.0.0.1:3000" });
    // Read back from a run's event file, as a dashboard attached to a detached run does.
    const roundTrip = JSON.parse(
      JSON.stringify(containerEvent({ action: "reattached", name: "n2", id: "x", image: "i" })),
    );
    expect(applySessionEvent(s, roundTrip).server).toMatchObject({
      container: "n2",
      message: "reattached to container n2",
    });
    // An event this dashboard does not know (an older or newer tool's) changes nothing.
    expect(applySessionEvent(s, { type: "pull", image: "x" } as never)).toBe(s);
    s = applySessionEvent(s, { type: "hint", message: "use --shm-size 1g" });
    expect(s.ui.notice?.text).toBe("hint: use --shm-size 1g");
    expect(s.logs[s.logs.length - 1]).toEqual({ source: "tool", level: "-", text: "hint: use --shm-size 1g" });
  });

  it("shows the kind runtime's progress while the cluster and pod come up", () => {
    let s = initialState({ now: T0 });
    s = applySessionEvent(s, {
      type: "progress",
      runtime: "kind",
      step: "cluster",
      message: "creating cluster triton-dev (about a minute)",
    });
    expect(s.server.message).toBe("kind: creating cluster triton-dev (about a minute)");
    s = applySessionEvent(s, {
      type: "progress",
      runtime: "kind",
      step: "pod",
      message: "waiting for the pod: ContainerCreating",
    });
    expect(s.server.message).toBe("kind: waiting for the pod: ContainerCreating");
  });

  it("prefers the serving version when the index lists several", () => {
    const s = applyIndex(started(), [
      { name: "offset", version: "2", state: "UNAVAILABLE", reason: "unloaded" },
      { name: "offset", version: "1", state: "READY" },
    ]);
    expect(s.models.find((m) => m.name === "offset")).toMatchObject({ version: "1", state: "READY" });
  });

  it("returns the same state when the index says nothing new (no redraw)", () => {
    const s = started();
    expect(
      applyIndex(s, [
        { name: "offset", version: "1", state: "READY" },
        { name: "tokenizer", version: "1", state: "READY" },
      ]),
    ).toBe(s);
  });

  it("summarises batching and instances from Triton's config JSON", () => {
    const c = summariseConfig({
      backend: "python",
      max_batch_size: 64,
      dynamic_batching: { preferred_batch_size: [8, 16], max_queue_delay_microseconds: "5000", priority_levels: 3 },
      instance_group: [
        { count: 2, kind: "KIND_GPU" },
        { count: 1, kind: "KIND_CPU" },
      ],
    });
    expect(c.instances).toBe("2×GPU + 1×CPU");
    expect(batchingText(c)).toBe("dynamic ≤64 [8,16] 5 ms 3 prio");
    const e = summariseConfig({
      platform: "ensemble",
      max_batch_size: 8,
      ensemble_scheduling: { step: [{ model_name: "tok" }, { model_name: "cls" }] },
    });
    expect(batchingText(e)).toBe("ensemble, 2 steps");
    expect(e.steps).toEqual(["tok", "cls"]);
    expect(e.instances).toBe("");
    expect(batchingText(summariseConfig({ backend: "python", max_batch_size: 0 }))).toBe("no batching");
  });

  it("keeps the last log lines, shortened, and holds a scrolled-back view still", () => {
    expect(
      tritonLogLine("I1129 17:47:25.798258 3019 model_lifecycle.cc:839] \"successfully loaded 'offset'\""),
    ).toEqual({ source: "triton", level: "I", text: "17:47:25 successfully loaded 'offset'" });
    let s = started();
    s = applyLogLines(
      s,
      Array.from({ length: MAX_LOG_LINES + 5 }, (_, i) => ({
        source: "triton" as const,
        level: "I" as const,
        text: `l${i}`,
      })),
    );
    expect(s.logs).toHaveLength(MAX_LOG_LINES);
    expect(s.logs[0]!.text).toBe("l5");
    s = { ...s, ui: { ...s.ui, logScroll: 10 } };
    s = applyLogLines(s, [{ source: "tool", level: "-", text: "new" }]);
    expect(s.ui.logScroll).toBe(11);
  });

  it("moves the clock only when something on screen would change", () => {
    const s = { ...started(), server: { ...started().server, startedAt: T0 } };
    expect(clockKey(s, T0 + 5_000)).toBe(clockKey(s, T0 + 50_000));
    expect(clockKey(s, T0 + 59_000)).not.toBe(clockKey(s, T0 + 61_000));
    expect(uptime(3 * 3600_000 + 5 * 60_000)).toBe("3h05m");
  });

  it("does not redraw for a scrape that only lengthens an idle history", () => {
    const view = (series: number[]) => ({
      view: {
        rangeMs: 10_000,
        scrapes: series.length + 1,
        summaries: false,
        gpus: [],
        models: [
          { model: "m", pending: 0, requestsPerSec: 0, throughputSeries: series, queueSeries: series.map(() => 0) },
        ],
      },
    });
    expect(metricsFingerprint(view([0, 0]))).toBe(metricsFingerprint(view([0, 0, 0, 0])));
    expect(metricsFingerprint(view([0, 5]))).not.toBe(metricsFingerprint(view([0, 5, 0])));
  });
});

describe("keys", () => {
  it("moves the selection within the filtered list and types into the filter", () => {
    let s = started();
    expect(selectedModel(s)?.name).toBe("offset");
    s = handleKey(s, "", { downArrow: true }).state;
    expect(selectedModel(s)?.name).toBe("tokenizer");
    s = handleKey(s, "j", {}).state;
    expect(selectedModel(s)?.name).toBe("tokenizer");
    s = handleInput(s, "/off", {}).state;
    expect(s.ui).toMatchObject({ filtering: "models", modelFilter: "off" });
    expect(selectedModel(s)?.name).toBe("offset");
    s = handleKey(s, "", { backspace: true }).state;
    expect(s.ui.modelFilter).toBe("of");
    s = handleKey(s, "", { escape: true }).state;
    expect(s.ui).toMatchObject({ filtering: undefined, modelFilter: "" });
  });

  it("filters the log in the log view, and toggles views", () => {
    let s = handleKey(started(), "l", {}).state;
    expect(s.ui.view).toBe("logs");
    s = handleInput(s, "/err", {}).state;
    s = handleKey(s, "", { return: true }).state;
    expect(s.ui).toMatchObject({ filtering: undefined, logFilter: "err", view: "logs" });
    s = handleKey(s, "l", {}).state;
    expect(s.ui.view).toBe("overview");
    s = handleKey(s, "m", {}).state;
    expect(s.ui.view).toBe("metrics");
    s = handleKey(s, "", { escape: true }).state;
    expect(s.ui.view).toBe("overview");
  });

  it("asks for reload, perf, cancel and quit; Ctrl-C quits even while typing a filter", () => {
    const s = started();
    expect(handleKey(s, "r", {}).command).toEqual({ type: "reload", model: "offset" });
    const p = handleKey(s, "p", {});
    expect(p.command).toEqual({ type: "perf", model: "offset" });
    expect(p.state.ui.view).toBe("perf");
    const running = { ...s, perf: { ...s.perf, status: "running" as const } };
    expect(handleKey(running, "p", {}).command).toEqual({ type: "cancel-perf" });
    expect(handleKey(s, "q", {}).command).toEqual({ type: "quit" });
    const typing = handleKey(s, "/", {}).state;
    expect(handleKey(typing, "q", {}).command).toBeUndefined();
    expect(handleKey(typing, "c", { ctrl: true }).command).toEqual({ type: "quit" });
    expect(handleInput(s, "qq", {}).command).toEqual({ type: "quit" });
  });

  it("takes shapes at a prompt with the --shape parser: pasted text, a refusal kept open, esc, enter", () => {
    let s = handleKey(started(), "P", {}).state;
    expect(s.ui.prompt).toEqual({ model: "offset", text: "" });
    // Pasted as one chunk: every character goes to the prompt, none is a key ("p", "q").
    const pasted = handleInput(s, "INPUT0=2x3 q=4xp", {});
    expect(pasted.command).toBeUndefined();
    s = pasted.state;
    expect(s.ui.prompt!.text).toBe("INPUT0=2x3 q=4xp");
    const refused = handleKey(s, "", { return: true });
    expect(refused.command).toBeUndefined();
    expect(refused.state.ui.prompt!.error).toMatch(/a shape must look like/);
    s = handleKey(refused.state, "", { backspace: true }).state;
    expect(s.ui.prompt).toEqual({ model: "offset", text: "INPUT0=2x3 q=4x" });
    s = handleInput(s, "5", {}).state;
    const run = handleKey(s, "", { return: true });
    expect(run.command).toEqual({ type: "perf", model: "offset", shapes: { INPUT0: [2, 3], q: [4, 5] } });
    expect(run.state.ui.prompt).toBeUndefined();
    expect(handleKey(run.state, "p", {}).command).toEqual(run.command);
    const again = handleKey(run.state, "P", {}).state;
    expect(again.ui.prompt!.text).toBe("INPUT0=2x3 q=4x5");
    expect(handleKey(again, "", { escape: true }).state.ui.prompt).toBeUndefined();
    // Typed fast, the text and its enter come as one chunk, as a real terminal sends them.
    const chunk = handleInput(handleKey(started(), "P", {}).state, "a=1x2\r", {});
    expect(chunk.command).toEqual({ type: "perf", model: "offset", shapes: { a: [1, 2] } });
    expect(chunk.state.ui.prompt).toBeUndefined();
    // While a check runs, enter keeps the shapes for the next p and starts nothing.
    const busy = { ...again, perf: { ...again.perf, status: "running" as const } };
    expect(handleKey(busy, "", { return: true }).command).toBeUndefined();
  });

  it("closes the help with any key", () => {
    const s = handleKey(started(), "?", {}).state;
    expect(s.ui.help).toBe(true);
    expect(handleKey(s, "x", {}).state.ui.help).toBe(false);
  });
});

describe("formatting", () => {
  it("draws sparklines from the newest values, averaging when there are more than cells", () => {
    expect(sparkline([0, 1, 2, 4], 4)).toBe("▁▃▅█");
    expect(sparkline([1, 1], 4)).toBe("  ██");
    expect(sparkline([0, 0, 8, 8], 2)).toBe("▁█");
    expect(sparkline([], 3)).toBe("   ");
  });

  it("wraps at spaces and marks a cut", () => {
    expect(wrap("aaa bbb ccc", 7)).toEqual(["aaa bbb", "ccc"]);
    expect(wrap("aaa bbb ccc ddd", 7, 1)).toEqual(["aaa bb…"]);
  });
});
