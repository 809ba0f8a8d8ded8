/**
 * perf, and every client of ours it drives, against a server that misbehaves: the fault server
 * (test/fixtures/fault-server) answers like Triton except on one route, where it plays one fault.
 * The built CLI runs as a user runs it (`triton-dev perf -u 127.0.0.1:PORT ...`), with its peak
 * memory (VmHWM) sampled while it runs: every fault ends in exit 1 and one line that names the
 * server, the request and what was expected, never an internal error, and memory stays far below
 * what an unbounded read reached (1.4 GB in 2 s against `huge`, before the limits).
 * bench/perf-faults.mjs prints the same runs as figures.
 */
import { describe, expect, it } from "vitest";
import { ServerConnectionError, ServerFaultError, ServerResponseError } from "../../src/errors.js";
import { MetricsScraper, type ScrapeState } from "../../src/metrics/scraper.js";
import { TritonHttpClient } from "../../src/triton/http-client.js";
import {
  CLIENTS,
  FAULTS,
  perfArgs,
  runCliSampled,
  startFaultServer,
  type SampledRun as Run,
} from "../fixtures/fault-server/harness.mjs";
import { testEnv } from "../helpers/cli.js";

/**
 * Peak memory allowed to a perf run against a fault. A run against a working server peaks at
 * about 120 MB here, the worst fault (an endless inference body, read up to the 256 MiB limit)
 * at about 350 MB; without the limits perf reached 1.4-2.5 GB.
 */
const PEAK_MB = 640;
/** Longest a run may take: the probe's 60 s deadline (silent, drip) plus start-up on a busy machine. */
const RUN_MS = 120_000;

/** What each fault is called in perf's message, whichever client met it. */
const SAID: Record<string, RegExp> = {
  silent: /did not answer within|no complete response within|timed out|DEADLINE_EXCEEDED/,
  endless: /limit|DEADLINE_EXCEEDED|not a ModelStreamInferResponse/,
  huge: /limit|RESOURCE_EXHAUSTED/,
  truncated: /cut its answer off|closed the connection|aborted|No message received|ended before the final response/,
  malformed: /not a JSON object|not an inference response|do not decode|not JSON|not a ModelStreamInferResponse/,
  frames: /is not answering/,
  reset: /cut its answer off|reset|RST_STREAM|ECONNRESET|closed before the answer ended/,
  drip: /within|timed out|DEADLINE_EXCEEDED/,
};

function expectOneLineError(r: Run, port: number, request: string, fault: string): void {
  const said = `exit ${r.code}, peak ${r.peakMb.toFixed(0)} MB\nstderr:\n${r.stderr}\nstdout:\n${r.stdout.slice(-2000)}`;
  expect(r.timedOut, said).toBe(false);
  expect(r.code, said).toBe(1);
  expect(r.stderr, said).not.toMatch(/internal error|\n\s+at /);
  const errors = r.stderr.split("\n").filter((l) => l.startsWith("error: "));
  expect(errors, said).toHaveLength(1);
  const line = errors[0]!;
  expect(line, said).toContain(`127.0.0.1:${port}`);
  expect(line, said).toMatch(SAID[fault]!);
  // The request and what was expected, except where the server never answered a health check.
  if (fault !== "frames") {
    expect(line, said).toContain(request);
    expect(line, said).toMatch(/expecting/);
  }
  expect(r.peakMb, said).toBeGreaterThan(0);
  expect(r.peakMb, said).toBeLessThan(PEAK_MB);
}

describe.concurrent("perf against a server that misbehaves", () => {
  for (const client of CLIENTS) {
    describe(client.what, () => {
      it(
        "measures the fault server when it plays no fault (the baseline)",
        async () => {
          const server = await startFaultServer({
            protocol: client.protocol,
            on: client.on,
            decoupled: !!client.decoupled,
          });
          try {
            const r: Run = await runCliSampled(perfArgs(server.port, client.protocol), await testEnv(), RUN_MS);
            expect(r.code, r.stderr).toBe(0);
            expect(r.stdout).toMatch(/^\s*1\s/m);
            expect(r.peakMb).toBeLessThan(PEAK_MB);
          } finally {
            await server.stop();
          }
        },
        RUN_MS + 30_000,
      );

      // `frames` spoils every connection to the port: only the first exchange meets it.
      for (const fault of FAULTS.filter((f: string) => f !== "frames" || client.id.endsWith("-control"))) {
        it(
          `${fault}: exit 1, one line naming server, request and expectation; memory bounded`,
          async () => {
            const server = await startFaultServer({
              protocol: client.protocol,
              fault,
              on: client.on,
              decoupled: !!client.decoupled,
            });
            try {
              const r: Run = await runCliSampled(perfArgs(server.port, client.protocol), await testEnv(), RUN_MS);
              expectOneLineError(r, server.port, client.request, fault);
            } finally {
              await server.stop();
            }
          },
          RUN_MS + 30_000,
        );
      }
    });
  }

  describe("metrics (perf's GPU probe at --metrics-url)", () => {
    // A broken metrics endpoint costs only the GPU figures: the model is still measured.
    for (const fault of FAULTS.filter((f: string) => f !== "frames")) {
      it(
        `${fault}: perf measures the model anyway, memory bounded`,
        async () => {
          const triton = await startFaultServer({ protocol: "http" });
          const metrics = await startFaultServer({ protocol: "http", fault, on: "metrics" });
          try {
            const r: Run = await runCliSampled(
              perfArgs(triton.port, "http", ["--metrics-url", `http://127.0.0.1:${metrics.port}/metrics`]),
              await testEnv(),
              RUN_MS,
            );
            expect(r.code, r.stderr).toBe(0);
            expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
            expect(r.stdout).toMatch(/^\s*1\s/m);
            expect(r.peakMb, `peak ${r.peakMb} MB`).toBeLessThan(PEAK_MB);
          } finally {
            await Promise.all([triton.stop(), metrics.stop()]);
          }
        },
        RUN_MS + 30_000,
      );
    }
  });

  describe("status and the dashboard's clients (in this process)", () => {
    // `status`, `up`'s readiness, reload and the dashboard ask through TritonHttpClient, whose
    // repository index is the first thing `status` reads; the dashboard scrapes with MetricsScraper.
    for (const fault of FAULTS.filter((f: string) => f !== "frames")) {
      it(`${fault}: the repository index fails with a ServerFaultError naming the exchange`, async () => {
        const server = await startFaultServer({ protocol: "http", fault, on: "index" });
        try {
          const client = new TritonHttpClient(`http://127.0.0.1:${server.port}`, { timeoutMs: 3000 });
          const err = await client.repositoryIndex().then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(err).toBeInstanceOf(ServerFaultError);
          const e = err as ServerFaultError;
          expect(e).toBeInstanceOf(
            fault === "huge" || fault === "endless" || fault === "malformed"
              ? ServerResponseError
              : ServerConnectionError,
          );
          expect(e.message).toContain(`Triton at http://127.0.0.1:${server.port}`);
          expect(e.message).toContain("POST /v2/repository/index, expecting the repository index as JSON");
          expect(e.message).not.toContain("\n");
        } finally {
          await server.stop();
        }
      }, 30_000);

      it(`${fault}: the dashboard's metrics scrape reports it and keeps its history`, async () => {
        const server = await startFaultServer({ protocol: "http", fault, on: "metrics" });
        try {
          const states: ScrapeState[] = [];
          const s = new MetricsScraper({
            url: `http://127.0.0.1:${server.port}/metrics`,
            timeoutMs: 2000,
            onUpdate: (x) => states.push(x),
          });
          await s.scrapeOnce();
          await s.stop();
          expect(states[0]!.error).toMatch(new RegExp(`metrics at http://127\\.0\\.0\\.1:${server.port}/metrics`));
          // An oversized page is refused at the limit, not read until the scrape's deadline.
          if (fault === "huge" || fault === "endless")
            expect(states[0]!.error).toMatch(/over triton-dev's 64 MiB limit|larger than triton-dev's 64 MiB limit/);
          expect(states[0]!.view.scrapes).toBe(0);
        } finally {
          await server.stop();
        }
      }, 30_000);
    }
  });
});
