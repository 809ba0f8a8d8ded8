import { describe, expect, it } from "vitest";
import { stagingLayout, toUserPaths, userPathsOf } from "../../src/state/staged-paths.js";

describe("staged paths as the user's", () => {
  const traceback = (root: string, store: string) =>
    `failed to load 'm' version 1: RuntimeError: boom At: ${root}/m/1/model.py(6): initialize ${store}/m@12/1/helper.py(3): <module>`;
  const user = traceback("/home/me/models", "/home/me/models").replace("/home/me/models/m@12", "/home/me/models/m");

  it("maps the run folder's repository and snapshots on this machine", () => {
    const run = { runDir: "/state/runs/r1", modelsDir: "/home/me/models" };
    expect(userPathsOf(run)(traceback("/state/runs/r1/repository", "/state/runs/r1/store"))).toBe(user);
  });

  // As the docker and kind drivers' delivery steps record them in the run record.
  const dockerSees = { repository: "/models", store: "/store" };
  it("maps the paths a container's Triton sees: docker's /models and /store, kind's run folder at /models", () => {
    const docker = userPathsOf({ tritonSees: dockerSees, runDir: "/state/runs/r2", modelsDir: "/home/me/models" });
    expect(docker(traceback("/models", "/store"))).toBe(user);
    const kind = userPathsOf({
      tritonSees: { repository: "/models/repository", store: "/models/store" },
      runDir: "/state/runs/r3",
      modelsDir: "/home/me/models/",
    });
    expect(kind(traceback("/models/repository", "/models/store"))).toBe(user);
  });

  it("maps each path once, also when the user's folder lies under a container's /models", () => {
    const docker = userPathsOf({ tritonSees: dockerSees, runDir: "/state/runs/r2", modelsDir: "/models/mine" });
    expect(docker("/state/runs/r2/repository/m/1/model.py and /models/m/1/model.py")).toBe(
      "/models/mine/m/1/model.py and /models/mine/m/1/model.py",
    );
  });

  it("leaves other paths alone", () => {
    const text = "cannot open /models2/m/1/model.py and /state/runs/r1/repositoryX/m";
    expect(toUserPaths(text, [stagingLayout("/state/runs/r1"), { repository: "/models", store: "/store" }], "/u")).toBe(
      text,
    );
  });
});

describe("a message quoting the staged folder beside another path", () => {
  const run = stagingLayout("/state/runs/r1");
  it("keeps the two sides apart when both would read as the same user path", () => {
    // The model compares where it was loaded from with the folder the user named.
    const a = toUserPaths("Expected /home/u/models/m/1, got /state/runs/r1/store/m@3/1", run, "/home/u/models");
    expect(a).toBe("Expected /home/u/models/m/1, got /home/u/models/m/1 (staged copy: /state/runs/r1/store/m@3/1)");
    // Two staged paths of the same model folder: the served link and its snapshot.
    const b = toUserPaths("Expected /state/runs/r1/repository/m, got /state/runs/r1/store/m@3.", run, "/home/u/models");
    expect(b).toBe(
      "Expected /home/u/models/m (staged copy: /state/runs/r1/repository/m), got /home/u/models/m (staged copy: /state/runs/r1/store/m@3).",
    );
    const [left, right] = b.split(", got ");
    expect(left!.replace("Expected ", "")).not.toBe(right!.replace(/\.$/, ""));
  });

  it("maps a path as before when nothing else in the message reads the same", () => {
    expect(
      toUserPaths('File "/state/runs/r1/store/m@3/1/model.py", line 4, in /home/u/models/m', run, "/home/u/models"),
    ).toBe('File "/home/u/models/m/1/model.py", line 4, in /home/u/models/m');
    expect(toUserPaths("loaded /state/runs/r1/repository/m/1 and /state/runs/r1/repository/m/1", run, "/u")).toBe(
      "loaded /u/m/1 and /u/m/1",
    );
  });
});
