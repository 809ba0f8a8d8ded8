import { describe, expect, it } from "vitest";
import {
  ExitTracker,
  exitWaitLine,
  lastLoadFailure,
  loadOutcome,
  unloadedVersion,
} from "../../src/triton/log-lines.js";

// Lines as Triton 2.51 writes them, without the glog prefix (state/log-file.ts stripTritonPrefix).
const VERSION_FAILED =
  "failed to load 'bad' version 1: Internal: RuntimeError: cannot initialize on purpose\\n\\nAt:\\n  /run/repository/bad/1/model.py(6): initialize\\n";
const POLL_FAILED =
  "Poll failed for model directory 'onlypy': Invalid model name: Could not determine backend for model 'onlypy' with no backend in model configuration.";
const NO_VERSION =
  "failed to load model 'nover': at least one version must be available under the version policy of model 'nover'";

describe("Triton's log lines about loads", () => {
  it("reads each of Triton's three ways of saying a load failed, with the message as one line", () => {
    expect(loadOutcome(VERSION_FAILED, "bad")).toEqual({
      ok: false,
      reason:
        "failed to load 'bad' version 1: Internal: RuntimeError: cannot initialize on purpose At: /run/repository/bad/1/model.py(6): initialize",
    });
    expect(loadOutcome(POLL_FAILED, "onlypy")).toEqual({ ok: false, reason: POLL_FAILED });
    expect(loadOutcome(NO_VERSION, "nover")).toEqual({ ok: false, reason: NO_VERSION });
    // The summary after the per-version line has no reason of its own.
    expect(loadOutcome("failed to load 'bad'", "bad")).toEqual({ ok: false, reason: "" });
    expect(loadOutcome("successfully loaded 'bad'", "bad")).toEqual({ ok: true });
  });

  it("matches the model's whole name only", () => {
    expect(loadOutcome(VERSION_FAILED, "ba")).toBeUndefined();
    expect(loadOutcome("successfully loaded 'bad2'", "bad")).toBeUndefined();
    expect(loadOutcome("loading: bad:1", "bad")).toBeUndefined();
  });

  it("finds the last failure, and none once a later load succeeded", () => {
    const lines = ["loading: bad:1", VERSION_FAILED, "failed to load 'bad'", "loading: good:1"];
    expect(lastLoadFailure(lines, "bad")).toMatch(/^failed to load 'bad' version 1: Internal: RuntimeError/);
    expect(lastLoadFailure([...lines, "successfully loaded 'bad'"], "bad")).toBeUndefined();
    expect(lastLoadFailure(lines, "good")).toBeUndefined();
  });

  it("reads unloads and the exit loop's count", () => {
    expect(unloadedVersion("successfully unloaded 'good' version 3")).toEqual({ model: "good", version: "3" });
    expect(unloadedVersion("successfully loaded 'good'")).toBeUndefined();
    expect(exitWaitLine("Timeout 9: Found 3 live models and 0 in-flight non-inference requests")).toEqual({
      secondsLeft: 9,
      liveModels: 3,
    });
    expect(exitWaitLine("Timeout 10: Found 0 model versions that have in-flight inferences")).toBeUndefined();
  });
});

describe("ExitTracker", () => {
  it("is done once every version loaded at the start has unloaded, whatever Triton still counts", () => {
    const t = new ExitTracker([
      { name: "good", version: "1" },
      { name: "good", version: "2" },
      { name: "other", version: "1" },
    ]);
    expect(t.unloading()).toEqual(["good", "other"]);
    expect(t.feed("Timeout 10: Found 3 live models and 0 in-flight non-inference requests")).toBe(false);
    expect(t.feed("successfully unloaded 'other' version 1")).toBe(true);
    expect(t.feed("successfully unloaded 'good' version 1")).toBe(true);
    expect(t.unloading()).toEqual(["good"]);
    expect(t.done()).toBe(false);
    // A version it was not waiting for (a second unload of the same one) changes nothing.
    expect(t.feed("successfully unloaded 'other' version 1")).toBe(false);
    expect(t.feed("successfully unloaded 'good' version 2")).toBe(true);
    expect(t.done()).toBe(true);
    // The load that failed beside a serving version, which Triton 2.51 keeps counting.
    t.feed("Timeout 8: Found 1 live models and 0 in-flight non-inference requests");
    expect(t.liveModels).toBe(1);
  });
});

describe("ExitTracker with the unloads that run the models' code", () => {
  // Triton 2.51's exit (server.cc): the inferences in flight first, then every model unloads.
  const loaded = [
    { name: "fin", version: "1" },
    { name: "plain", version: "1" },
  ];

  it("can end once Triton has nothing in flight and the awaited unloads are over, the others aside", () => {
    const t = new ExitTracker(loaded, [{ model: "fin", why: "1/model.py:9 defines finalize" }]);
    expect(t.awaited()).toEqual([{ model: "fin", why: "1/model.py:9 defines finalize" }]);
    expect(t.feed("Timeout 10: Found 1 HTTP service connections")).toBe(true);
    expect(t.progressLine()).toBe(
      "waiting for 1 HTTP connection(s) to Triton to close (a request in flight, or a client that keeps its connection open)",
    );
    expect(t.feed("Waiting for in-flight requests to complete.")).toBe(false);
    expect(t.feed("Timeout 10: Found 1 model versions that have in-flight inferences")).toBe(true);
    expect(t.feed("Model 'plain' (version 1) has 2 in-flight inferences")).toBe(true);
    expect(t.progressLine()).toBe("waiting for the requests in flight to finish: plain (2)");
    expect(t.canEnd()).toBe(false);
    t.feed("Timeout 9: Found 0 model versions that have in-flight inferences");
    expect(t.feed("All models are stopped, unloading models")).toBe(true);
    expect(t.drained).toBe(true);
    expect(t.canEnd()).toBe(false);
    expect(t.progressLine()).toBe("waiting for Triton to unload fin (1/model.py:9 defines finalize)");
    t.feed("successfully unloaded 'fin' version 1");
    // plain is still unloading (its stubs end one at a time): nothing of the user's is left to run.
    expect(t.unloading()).toEqual(["plain"]);
    expect(t.canEnd()).toBe(true);
  });

  it("with nothing to await, can end as soon as Triton has nothing in flight", () => {
    const t = new ExitTracker(loaded, []);
    expect(t.canEnd()).toBe(false);
    t.feed("Timeout 10: Found 0 model versions that have in-flight inferences");
    expect(t.canEnd()).toBe(false);
    t.feed("All models are stopped, unloading models");
    expect(t.canEnd()).toBe(true);
  });

  it("never ends early without the list (a stop that knows nothing of the models waits for every unload)", () => {
    const t = new ExitTracker(loaded);
    t.feed("All models are stopped, unloading models");
    t.feed("successfully unloaded 'fin' version 1");
    expect(t.canEnd()).toBe(false);
    t.feed("successfully unloaded 'plain' version 1");
    expect(t.canEnd()).toBe(false);
    expect(t.done()).toBe(true);
  });
});
