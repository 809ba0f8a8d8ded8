import { describe, expect, it } from "vitest";
import { formatEvent, printEvents } from "../../src/cli/output.js";
import { pullEvent } from "../../src/runtimes/clients/container/pull-event.js";
import { containerEvent, monitoringEvent } from "../../src/runtimes/docker/events.js";
import { setupEvent } from "../../src/runtimes/local/events.js";
import type { SessionEvent } from "../../src/session/events.js";

const MiB = 2 ** 20;
const pull = (over: Partial<Parameters<typeof pullEvent>[1]>) =>
  pullEvent("docker", {
    image: "img:1",
    layers: [
      { id: "a", phase: "done" },
      { id: "b", phase: "downloading", total: 3 * MiB },
    ],
    done: 1,
    downloaded: 2 * MiB,
    size: 5 * MiB,
    finished: false,
    ...over,
  });

describe("up's plain lines for a runtime's own events", () => {
  it("prints what the driver says an event reads, and nothing where it says nothing", () => {
    expect(formatEvent(pull({ changed: { id: "b", phase: "downloading", total: 3 * MiB }, phaseChanged: true }))).toBe(
      "pull img:1: layer b downloading (3.0 MB)",
    );
    // A byte count moving within a phase is the dashboard's, not a line.
    expect(formatEvent(pull({ changed: { id: "b", phase: "downloading", current: 1 }, phaseChanged: false }))).toBe(
      undefined,
    );
    expect(formatEvent(pull({ finished: true }))).toBe("pulled img:1: 2 layer(s), 5.0 MB downloaded");
    expect(
      formatEvent(
        containerEvent({
          action: "created",
          name: "c",
          id: "0123456789abcdef",
          image: "i",
          replaced: "the image changed",
        }),
      ),
    ).toBe("created container c (0123456789ab, i), replacing ours because the image changed");
    expect(formatEvent(monitoringEvent({ prometheus: "http://p", grafana: "http://g" }))).toBe(
      'monitoring: Prometheus http://p  Grafana http://g (dashboard "Triton (triton-dev)")',
    );
    expect(formatEvent(setupEvent({ step: "venv", message: "creating virtual environment /v" }))).toBe(
      "setup: creating virtual environment /v",
    );
    expect(formatEvent(setupEvent({ step: "pip", message: "m", line: "Collecting numpy" }))).toBe(undefined);
    expect(formatEvent(setupEvent({ step: "pip", message: "m", line: "Successfully installed x" }))).toBe(
      "setup: Successfully installed x",
    );
  });

  it("keeps a driver event's own fields in --json, as a script reads them, and reads them back the same", () => {
    const lines: string[] = [];
    const print = printEvents({ out: (t) => lines.push(t), err: () => {} }, true);
    print(containerEvent({ action: "reattached", name: "c", id: "0123456789abcdef", image: "i" }));
    const back = JSON.parse(lines[0]!) as SessionEvent & Record<string, unknown>;
    expect(back).toMatchObject({ type: "container", runtime: "docker", action: "reattached", name: "c", image: "i" });
    expect(formatEvent(back)).toBe("reattached to the running container c (0123456789ab, i): same settings as before");
  });

  it("prints nothing for an event it does not know (a run file written by another version)", () => {
    expect(formatEvent({ type: "pull", image: "x" } as never)).toBe(undefined);
  });
});
