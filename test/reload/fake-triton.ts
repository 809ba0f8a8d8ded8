import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { ModelState } from "../../src/triton/http-client.js";

/**
 * The few endpoints of Triton's HTTP API the reload controller calls, on 127.0.0.1: enough to
 * test it in milliseconds without a tritonserver. Every request is recorded as "METHOD path".
 */
export interface FakeTriton {
  url: string;
  calls: string[];
  models: Map<string, { state: ModelState; version: string }>;
  /** Loads of these models answer 400 with this message, as Triton answers a load that failed. */
  loadErrors: Map<string, string>;
  /** While set, load requests wait for it before answering (an edit caught mid-load). */
  gate: Promise<void> | undefined;
  /** Each load request's parameters, by model, in order. */
  loadParameters: Map<string, Array<Record<string, string>>>;
  /** When set, loads and unloads are logged here the way Triton logs them. */
  logFile: string | undefined;
  close(): Promise<void>;
}

export async function startFakeTriton(): Promise<FakeTriton> {
  const fake: Omit<FakeTriton, "url" | "close"> = {
    calls: [],
    models: new Map(),
    loadErrors: new Map(),
    gate: undefined,
    loadParameters: new Map(),
    logFile: undefined,
  };
  const logged = (text: string) => {
    if (fake.logFile) fs.appendFileSync(fake.logFile, `I0101 00:00:09.000000 1 model_lifecycle.cc:1] ${text}\n`);
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => void answer(req.method ?? "GET", req.url ?? "/", Buffer.concat(chunks).toString("utf8")));
    const send = (status: number, body?: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(body === undefined ? "" : JSON.stringify(body));
    };
    const answer = async (method: string, url: string, body: string) => {
      fake.calls.push(`${method} ${url}`);
      const repo = /^\/v2\/repository\/models\/([^/]+)\/(load|unload)$/.exec(url);
      const ready = /^\/v2\/models\/([^/]+)\/ready$/.exec(url);
      if (method === "GET" && url === "/v2/health/ready") return send(200);
      if (method === "POST" && url === "/v2/repository/index") {
        return send(
          200,
          [...fake.models].map(([name, m]) => ({ name, version: m.version, state: m.state })),
        );
      }
      if (method === "POST" && repo) {
        const name = decodeURIComponent(repo[1]!);
        if (repo[2] === "unload") {
          const version = fake.models.get(name)?.version ?? "1";
          fake.models.set(name, { state: "UNAVAILABLE", version });
          logged(`successfully unloaded '${name}' version ${version}`);
          return send(200, {});
        }
        await fake.gate;
        const parameters = ((body ? JSON.parse(body) : {}) as { parameters?: Record<string, string> }).parameters ?? {};
        fake.loadParameters.set(name, [...(fake.loadParameters.get(name) ?? []), parameters]);
        // A load that brings its own config (the repository API's override) is not the model's files.
        const error = parameters.config === undefined ? fake.loadErrors.get(name) : undefined;
        if (error) {
          fake.models.set(name, { state: "UNAVAILABLE", version: "1" });
          return send(400, { error });
        }
        fake.models.set(name, { state: "READY", version: "1" });
        logged(`successfully loaded '${name}'`);
        return send(200, {});
      }
      if (method === "GET" && ready) {
        return send(fake.models.get(decodeURIComponent(ready[1]!))?.state === "READY" ? 200 : 400);
      }
      send(404, { error: `the fake Triton does not answer ${method} ${url}` });
    };
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(fake, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
