import { LatencyHistogram, type LatencySummary } from "./histogram.js";

/**
 * What one streamed request did, from the client's clock: its data responses (the empty response
 * that carries only the final flag is no data), when the first came, the gaps between the others,
 * and the elements their outputs held.
 */
export interface StreamFacts {
  responses: number;
  /** From the request written to its first data response; absent when it had none. */
  firstResponseUs?: number;
  /**
   * From the request written to its last data response; absent when it had none. perf_analyzer's
   * latency for a decoupled model: it stops there, before an empty final response.
   */
  lastResponseUs?: number;
  /** Between consecutive data responses: one fewer than `responses`. */
  gapsUs: number[];
  /** Output elements over all its data responses (tokens, for a generator of one id per response). */
  elements: number;
}

/** Facts from timestamps (ms, one clock): when the request went out, when each data response came. */
export function factsOf(sentMs: number, arrivalsMs: readonly number[], elements: number): StreamFacts {
  const gapsUs: number[] = [];
  for (let i = 1; i < arrivalsMs.length; i++) gapsUs.push((arrivalsMs[i]! - arrivalsMs[i - 1]!) * 1000);
  return {
    responses: arrivalsMs.length,
    ...(arrivalsMs.length
      ? { firstResponseUs: (arrivalsMs[0]! - sentMs) * 1000, lastResponseUs: (arrivalsMs.at(-1)! - sentMs) * 1000 }
      : {}),
    gapsUs,
    elements,
  };
}

/** The streaming side of one measurement window: completed requests only, as its latencies are. */
export class StreamWindow {
  readonly firstResponse = new LatencyHistogram();
  readonly lastResponse = new LatencyHistogram();
  readonly interResponse = new LatencyHistogram();
  requests = 0;
  responses = 0;
  elements = 0;

  record(f: StreamFacts): void {
    this.requests++;
    this.responses += f.responses;
    this.elements += f.elements;
    if (f.firstResponseUs !== undefined) this.firstResponse.record(f.firstResponseUs);
    if (f.lastResponseUs !== undefined) this.lastResponse.record(f.lastResponseUs);
    for (const g of f.gapsUs) this.interResponse.record(g);
  }
}

/** A level's streaming figures, the merge of the same windows as its latencies. */
export interface StreamSummary {
  requests: number;
  responses: number;
  requestsPerSec: number;
  responsesPerSec: number;
  /** Data responses per completed request. */
  responsesPerRequest: number;
  outputElements: number;
  outputElementsPerSec: number;
  /** Time to first response; `count` 0 when no request had a response. */
  firstResponse: LatencySummary;
  /** Time to the last data response (perf_analyzer's latency); `count` 0 when no request had a response. */
  lastResponse: LatencySummary;
  /** Inter-response latency; `count` 0 when no request had two responses. */
  interResponse: LatencySummary;
}

export function summariseStream(windows: readonly StreamWindow[], durationMs: number): StreamSummary {
  const requests = windows.reduce((a, w) => a + w.requests, 0);
  const responses = windows.reduce((a, w) => a + w.responses, 0);
  const outputElements = windows.reduce((a, w) => a + w.elements, 0);
  const perSec = (n: number) => (durationMs > 0 ? (n * 1000) / durationMs : 0);
  return {
    requests,
    responses,
    requestsPerSec: perSec(requests),
    responsesPerSec: perSec(responses),
    responsesPerRequest: requests ? responses / requests : 0,
    outputElements,
    outputElementsPerSec: perSec(outputElements),
    firstResponse: LatencyHistogram.merge(windows.map((w) => w.firstResponse)).summary(),
    lastResponse: LatencyHistogram.merge(windows.map((w) => w.lastResponse)).summary(),
    interResponse: LatencyHistogram.merge(windows.map((w) => w.interResponse)).summary(),
  };
}
