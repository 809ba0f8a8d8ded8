import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  forgetFailedLoad,
  placeholderConfigText,
  placeholderLoadParameters,
  versionsToForget,
} from "../../src/reload/forget.js";
import { servedModels, StagingRepository } from "../../src/reload/stage.js";
import { TritonHttpClient } from "../../src/triton/http-client.js";
import { pythonModel, removeTempRepos, tempRepo, writeFiles } from "../repo/helpers.js";
import { FakeClock } from "../../src/fake-clock.js";
import { advanceUntil } from "../helpers/fake-time.js";

afterAll(removeTempRepos);

const line = (text: string) => `I0101 00:00:01.000000 1 model_lifecycle.cc:1] "${text}"\n`;

describe("having Triton forget a failed load", () => {
  it("forgets each version Triton tried, or version 1 when it tried none", () => {
    expect(versionsToForget(["3", undefined, "1"], ["1", "2"])).toEqual(["1", "2", "3"]);
    expect(versionsToForget([undefined], [])).toEqual(["1"]);
    expect(versionsToForget([], ["warmup", "0x"])).toEqual(["1"]);
  });

  it("loads a placeholder of the same name and versions, on the CPU, from the request (explicit mode)", () => {
    const p = placeholderLoadParameters("bad", ["1", "3"]);
    expect(JSON.parse(p.config!)).toEqual({
      name: "bad",
      backend: "python",
      max_batch_size: 0,
      input: [],
      output: [],
      instance_group: [{ kind: "KIND_CPU", count: 1 }],
      version_policy: { specific: { versions: [1, 3] } },
    });
    expect(Object.keys(p).sort()).toEqual(["config", "file:1/model.py", "file:3/model.py"]);
    expect(placeholderConfigText("bad", ["1", "3"])).toContain("version_policy: { specific: { versions: [ 1, 3 ] } }");
  });

  it("serves the placeholder for one poll, then withdraws it and waits for Triton to unload every version (poll mode)", async () => {
    const src = await tempRepo();
    const run = await tempRepo();
    await writeFiles(src, pythonModel("bad"));
    const staging = new StagingRepository(run);
    await staging.init(src);
    await staging.remove("bad");
    const logFile = path.join(run, "tritonserver.log");
    await fsp.writeFile(logFile, line("started"));
    const link = path.join(staging.repository, "bad");
    const seen: string[] = [];
    // Triton's poll and the log's reads, every 20 ms of the clock; the files are real.
    const clock = new FakeClock();
    // Triton's poll, as far as this needs: it loads what the link serves, and unloads it once gone.
    let stop = false;
    const triton = (async () => {
      let loaded = false;
      while (!stop) {
        const target = await fsp.readlink(link).catch(() => undefined);
        if (target && !loaded) {
          seen.push(target, ...(await fsp.readdir(path.join(staging.repository, "bad"))).sort());
          seen.push(String(await servedModels(run)));
          // A retry of the broken snapshot that began before the swap fails first.
          fs.appendFileSync(
            logFile,
            line("failed to load 'bad' version 1: Internal: boom") + line("successfully loaded 'bad'"),
          );
          loaded = true;
        } else if (!target && loaded) {
          fs.appendFileSync(
            logFile,
            line("successfully unloaded 'bad' version 1") + line("successfully unloaded 'bad' version 3"),
          );
          return;
        }
        await clock.sleep(20);
      }
    })();
    const forgetting = forgetFailedLoad(
      {
        client: new TritonHttpClient("http://127.0.0.1:9"),
        staging,
        mode: "poll",
        pollSecs: 1,
        logFile,
        // Far beyond the steps below: the deadline is the next test's subject, not this one's.
        loadTimeoutMs: 600_000,
        closed: () => false,
        clock,
      },
      "bad",
      ["1", "3"],
    );
    let settled = false;
    void forgetting.finally(() => (settled = true));
    await advanceUntil(clock, () => settled, 20, "the forget");
    const ok = await forgetting;
    stop = true;
    await clock.advance(20);
    await triton;
    expect(ok).toBe(true);
    expect(seen).toEqual([path.join("..", "store", "bad@placeholder"), "1", "3", "config.pbtxt", ""]);
    expect(fs.existsSync(link)).toBe(false);
    expect(staging.has("bad")).toBe(false);
  });

  it("gives up at its deadline, serving nothing, when Triton never loads the placeholder", async () => {
    const src = await tempRepo();
    const run = await tempRepo();
    await writeFiles(src, pythonModel("bad"));
    const staging = new StagingRepository(run);
    await staging.init(src);
    const logFile = path.join(run, "tritonserver.log");
    await fsp.writeFile(logFile, line("started"));
    const clock = new FakeClock();
    const forgetting = forgetFailedLoad(
      {
        client: new TritonHttpClient("http://127.0.0.1:9"),
        staging,
        mode: "poll",
        pollSecs: 0,
        logFile,
        // The log is read every 20 ms of the clock until then: a short deadline keeps those reads few.
        loadTimeoutMs: 2_000,
        closed: () => false,
        clock,
      },
      "bad",
      ["1"],
    );
    await clock.waiting();
    await clock.advance(1_950);
    expect(fs.existsSync(path.join(staging.repository, "bad"))).toBe(true);
    await clock.advance(50);
    expect(await forgetting).toBe(false);
    expect(fs.existsSync(path.join(staging.repository, "bad"))).toBe(false);
  });
});
