import http from "node:http";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/net/ports.js";
import { HttpConnectionError, KeepAliveHttpPool, buildPostRequest } from "../../src/triton/http-pool.js";

/** A real HTTP server on loopback that answers in the framings the pool must read. */
describe("KeepAliveHttpPool", () => {
  let server: http.Server;
  let port: number;
  const sockets = new Set<net.Socket>();

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks);
        if (req.url === "/chunked") {
          res.writeHead(200, { "content-type": "text/plain" });
          res.write("hello ");
          setTimeout(() => res.end("world"), 5);
        } else if (req.url === "/close") {
          res.writeHead(200, { connection: "close", "content-length": "2" });
          res.end("ok");
        } else if (req.url === "/slow") {
          setTimeout(() => {
            res.writeHead(200, { "content-length": "0" });
            res.end();
          }, 500);
        } else if (req.url === "/error") {
          res.writeHead(400, { "content-type": "application/json", "content-length": "17" });
          res.end('{"error":"bad x"}');
        } else {
          res.writeHead(200, { "content-length": String(body.length) });
          res.end(body);
        }
      });
    });
    server.on("connection", (s) => {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
    });
    port = await freePort();
    await new Promise<void>((r) => server.listen(port, "127.0.0.1", r));
  });

  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });

  const post = (path: string, body = "") => buildPostRequest(`127.0.0.1:${port}`, path, Buffer.from(body));

  it("echoes bodies over a fixed number of kept-alive connections", async () => {
    const pool = new KeepAliveHttpPool("127.0.0.1", port, { maxConnections: 2 });
    const bodies = Array.from({ length: 20 }, (_, i) => `request ${i} ${"x".repeat(i * 1000)}`);
    const rs = await Promise.all(bodies.map((b) => pool.request(post("/echo", b))));
    expect(rs.map((r) => r.body.toString())).toEqual(bodies);
    expect(rs.every((r) => r.status === 200 && r.endMs >= r.firstByteMs && r.firstByteMs >= r.startMs)).toBe(true);
    expect(pool.connections).toBe(2);
    pool.close();
  });

  it("reads chunked bodies, error statuses, and honours Connection: close", async () => {
    const pool = new KeepAliveHttpPool("127.0.0.1", port, { maxConnections: 1 });
    expect((await pool.request(post("/chunked"))).body.toString()).toBe("hello world");
    const err = await pool.request(post("/error"));
    expect(err.status).toBe(400);
    expect(JSON.parse(err.body.toString())).toEqual({ error: "bad x" });
    expect((await pool.request(post("/close"))).body.toString()).toBe("ok");
    expect((await pool.request(post("/echo", "after close"))).body.toString()).toBe("after close");
    pool.close();
  });

  it("fails requests with a code when the server refuses, times out, or the pool closes", async () => {
    const dead = new KeepAliveHttpPool("127.0.0.1", await freePort(), { maxConnections: 1 });
    const refused = await dead.request(post("/x")).catch((e) => e);
    expect(refused).toBeInstanceOf(HttpConnectionError);
    expect(refused.code).toBe("ECONNREFUSED");
    dead.close();

    const pool = new KeepAliveHttpPool("127.0.0.1", port, { maxConnections: 1, requestTimeoutMs: 100 });
    const timedOut = await pool.request(post("/slow")).catch((e) => e);
    expect(timedOut.code).toBe("ETIMEDOUT");
    const queued = [pool.request(post("/slow")), pool.request(post("/slow"))].map((p) => p.catch((e) => e));
    pool.close();
    expect((await Promise.all(queued)).map((e) => e.code).sort()).toEqual(["ECLOSED", "ECLOSED"]);
  });
});
