import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/fake-clock.js";
import { MetricsScraper, type ScrapeState } from "../../src/metrics/scraper.js";

let server: http.Server | undefined;
afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

/** A real HTTP endpoint on loopback answering like Triton's /metrics, with a counter that grows. */
async function fakeTriton(): Promise<string> {
  let n = 0;
  server = http.createServer((req, res) => {
    if (req.url !== "/metrics") return void res.writeHead(404).end();
    n += 10;
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
    res.end(
      `# TYPE nv_inference_request_success counter\nnv_inference_request_success{model="m",version="1"} ${n}\n# TYPE nv_inference_queue_duration_us counter\nnv_inference_queue_duration_us{model="m",version="1"} ${n * 100}\n`,
    );
  });
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}/metrics`;
}

describe("MetricsScraper", () => {
  it("scrapes, keeps history and derives rates with the scrape clock", async () => {
    const url = await fakeTriton();
    const states: ScrapeState[] = [];
    let t = 0;
    const s = new MetricsScraper({ url, now: () => (t += 2000), onUpdate: (x) => states.push(x) });
    await s.scrapeOnce();
    await s.scrapeOnce();
    await s.scrapeOnce();
    const last = states[states.length - 1]!;
    expect(last.error).toBeUndefined();
    expect(last.view.scrapes).toBe(3);
    expect(last.view.models[0]!.requestsPerSec).toBe(5);
    expect(last.view.models[0]!.queueAvgUs).toBe(100);
  });

  it("reports an endpoint that does not answer, keeping what it had", async () => {
    const states: ScrapeState[] = [];
    const s = new MetricsScraper({
      url: "http://127.0.0.1:9/metrics",
      timeoutMs: 500,
      onUpdate: (x) => states.push(x),
    });
    await s.scrapeOnce();
    expect(states[0]!.error).toMatch(/did not answer/);
    expect(states[0]!.view.scrapes).toBe(0);
  });

  it("scrapes on its timer until stopped", async () => {
    const url = await fakeTriton();
    const clock = new FakeClock();
    const states: ScrapeState[] = [];
    // The next scrape's answer (real HTTP on loopback), awaited after the clock says it is due.
    let answered = () => {};
    const next = () => new Promise<void>((r) => (answered = r));
    const s = new MetricsScraper({
      url,
      clock,
      onUpdate: (x) => {
        states.push(x);
        answered();
      },
    });
    let scraped = next();
    s.start();
    await scraped;
    for (let i = 0; i < 2; i++) {
      scraped = next();
      await clock.advance(2_000);
      await scraped;
    }
    expect(states.map((x) => x.view.scrapes)).toEqual([1, 2, 3]);
    // Rates over the fake clock's 2 s between scrapes: 10 requests each.
    expect(states[2]!.view.models[0]!.requestsPerSec).toBe(5);
    await s.stop();
    // No timer is left, and five intervals later nothing more was scraped.
    expect(clock.pending).toBe(0);
    await clock.advance(10_000);
    expect(states).toHaveLength(3);
  });
});
