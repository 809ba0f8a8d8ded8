import net from "node:net";
import { describe, expect, it } from "vitest";
import { findPortHolder, freePort, isPortFree } from "../../src/net/ports.js";

describe("ports", () => {
  it("sees a taken port and names the process holding it", async () => {
    const srv = net.createServer();
    await new Promise<void>((r) => srv.listen({ port: 0, host: "127.0.0.1" }, r));
    const port = (srv.address() as net.AddressInfo).port;
    try {
      expect(await isPortFree(port)).toBe(false);
      const holder = findPortHolder(port);
      expect(holder?.pid).toBe(process.pid);
      expect(holder?.command).toContain("node");
    } finally {
      await new Promise((r) => srv.close(r));
    }
    expect(await isPortFree(port)).toBe(true);
    expect(findPortHolder(port)).toBeUndefined();
  });

  it("hands out distinct free ports", async () => {
    const a = await freePort();
    expect(await isPortFree(a)).toBe(true);
  });
});
