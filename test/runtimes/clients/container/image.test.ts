import { describe, expect, it } from "vitest";
import { PullProgress, pullError } from "../../../../src/runtimes/clients/container/image.js";

describe("pull progress", () => {
  it("folds the daemon's stream into per-layer phases and byte counts", () => {
    const p = new PullProgress("img:1");
    const feed = (m: object) => p.update(m);
    expect(feed({ status: "Pulling from x/img", id: "1" })).toBeUndefined();
    expect(feed({ status: "Pulling fs layer", id: "aaa" })).toMatchObject({
      layer: { id: "aaa", phase: "waiting" },
      phaseChanged: true,
    });
    feed({ status: "Already exists", id: "bbb" });
    expect(feed({ status: "Downloading", id: "aaa", progressDetail: { current: 10, total: 100 } })).toMatchObject({
      phaseChanged: true,
    });
    expect(feed({ status: "Downloading", id: "aaa", progressDetail: { current: 60, total: 100 } })).toMatchObject({
      layer: { current: 60, total: 100 },
      phaseChanged: false,
    });
    expect(feed({ status: "Downloading", id: "aaa", progressDetail: { current: 60, total: 100 } })).toBeUndefined();
    let s = p.snapshot();
    expect(s).toMatchObject({ done: 1, downloaded: 60, size: 100, finished: false });
    feed({ status: "Verifying Checksum", id: "aaa" });
    feed({ status: "Download complete", id: "aaa" });
    feed({ status: "Extracting", id: "aaa", progressDetail: { current: 5, total: 100 } });
    s = p.snapshot();
    expect(s.downloaded).toBe(100);
    expect(s.layers.find((l) => l.id === "aaa")?.phase).toBe("extracting");
    feed({ status: "Pull complete", id: "aaa" });
    feed({ status: "Digest: sha256:..." });
    expect(p.snapshot()).toMatchObject({
      done: 2,
      layers: [
        { id: "aaa", phase: "done" },
        { id: "bbb", phase: "done" },
      ],
    });
  });
});

describe("pull errors", () => {
  it("say what to do for an unreachable registry, a login and a wrong name", () => {
    const offline = pullError("nvcr.io/nvidia/tritonserver:24.10-py3", {
      json: { message: 'Get "https://nvcr.io/v2/": dial tcp: lookup nvcr.io: no such host' },
    });
    expect(offline.message).toMatch(
      /could not pull the Triton image nvcr.io\/nvidia\/tritonserver:24.10-py3: .*no such host/,
    );
    expect(offline.hint).toMatch(/cannot reach nvcr.io.*docker pull.*docker load/);
    const denied = pullError("nvcr.io/nvidia/tritonserver:24.10-py3", {
      json: { message: "unauthorized: authentication required" },
    });
    expect(denied.hint).toMatch(/docker login nvcr.io.*\$oauthtoken/);
    const missing = pullError(
      "grafana/grafana:99",
      { json: { message: "manifest for grafana/grafana:99 not found: manifest unknown" } },
      "Grafana (--monitoring)",
    );
    expect(missing.message).toMatch(/could not pull the Grafana \(--monitoring\) image grafana\/grafana:99/);
    expect(missing.hint).toMatch(/Check the image name and tag/);
  });
});
