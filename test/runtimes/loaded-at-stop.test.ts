import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { loadedBeforeStop } from "../../src/runtimes/loaded-at-stop.js";

const KEY = { header: "triton-dev-repository-key", value: "k" };
let server: http.Server | undefined;

/** A server on 127.0.0.1 that answers the repository index as `answer` says. */
async function serve(answer: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<number> {
  server = http.createServer((req, res) => {
    req.resume();
    answer(req, res);
  });
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
  return (server.address() as AddressInfo).port;
}

afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  server = undefined;
});

describe("the loaded models read before a stop (every runtime's stop)", () => {
  it("are Triton's repository index, asked with the run's key", async () => {
    let seen: string | undefined;
    const port = await serve((req, res) => {
      seen = `${req.method} ${req.url} ${String(req.headers[KEY.header])}`;
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify([{ name: "m", version: "1", state: "READY" }]));
    });
    const loaded = await loadedBeforeStop({ host: "127.0.0.1", ports: { http: port }, repositoryKey: KEY });
    expect(loaded).toEqual([{ name: "m", version: "1", state: "READY" }]);
    expect(seen).toBe("POST /v2/repository/index k");
  });

  it("are none when Triton does not answer in time or refuses: the stop is then the plain one", async () => {
    const silent = await serve(() => {});
    expect(await loadedBeforeStop({ host: "127.0.0.1", ports: { http: silent }, repositoryKey: KEY }, 200)).toEqual([]);
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    const refusing = await serve((_req, res) => {
      res.statusCode = 403;
      res.end("{}");
    });
    expect(await loadedBeforeStop({ host: "127.0.0.1", ports: { http: refusing }, repositoryKey: KEY })).toEqual([]);
  });
});
