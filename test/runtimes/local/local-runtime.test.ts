import { describe, expect, it } from "vitest";
import { localServerArgs as serverArgs } from "../../../src/runtimes/local/local-runtime.js";
import type { StartOptions } from "../../../src/runtimes/driver.js";

const base: StartOptions = {
  runId: "r",
  runDir: "/run",
  logFile: "/run/tritonserver.log",
  repository: "/run/repository",
  ports: { http: 8000, grpc: 8001, metrics: 8002 },
  host: "127.0.0.1",
  reload: "explicit",
  pollSecs: 1,
  repositoryKey: { header: "triton-dev-key", value: "k", dir: "/run/key" },
};

describe("local tritonserver arguments", () => {
  it("turns config auto-complete off only when the session says no model needs it", () => {
    expect(serverArgs({ backendDir: "/b" }, base)).not.toContain("--disable-auto-complete-config");
    expect(serverArgs({ backendDir: "/b" }, { ...base, autoCompleteConfig: true })).not.toContain(
      "--disable-auto-complete-config",
    );
    expect(serverArgs({ backendDir: "/b" }, { ...base, autoCompleteConfig: false })).toContain(
      "--disable-auto-complete-config",
    );
  });
});
