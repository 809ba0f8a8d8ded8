import { ServerConnectionError, ServerResponseError, type ServerExchange } from "../errors.js";

/**
 * Response limits, each far above what a real Triton answers (measured on 2.51 with the sample
 * models, then scaled to a large deployment) and far below what would hurt the machine: a server
 * that announces or sends more is broken, or is not Triton.
 *
 * - JSON answers (metadata, config, statistics, repository index, errors): a model's metadata is
 *   about 260 bytes, its config 1-1.5 KB, its statistics about 450 bytes per version, an index
 *   entry about 58 bytes. 10,000 models with 10 versions each come to about 45 MB of statistics
 *   and 6 MB of index; 64 MiB holds more than that.
 * - The metrics page: about 4.1 KB per model version plus 3 KB of HELP/TYPE lines (and a few lines
 *   per GPU); 64 MiB holds more than 15,000 model versions.
 * - One inference response (HTTP body or gRPC message): the sample models answer at most 256 KB
 *   (image_classifier, 64 x 1000 FP32). Triton itself refuses HTTP requests over 64 MiB by
 *   default (--http-max-input-size); 256 MiB leaves four times that for an answer.
 */
export const MiB = 1024 * 1024;
export const JSON_RESPONSE_LIMIT = 64 * MiB;
export const METRICS_RESPONSE_LIMIT = 64 * MiB;
export const INFER_RESPONSE_LIMIT = 256 * MiB;

export function formatBytes(n: number): string {
  if (n >= 1024 * MiB) return `${(n / 1024 / MiB).toFixed(1)} GiB`;
  if (n >= MiB) return `${(n / MiB).toFixed(n >= 10 * MiB ? 0 : 1)} MiB`;
  if (n >= 1024) return `${(n / 1024).toFixed(n >= 10 * 1024 ? 0 : 1)} KiB`;
  return `${n} bytes`;
}

export interface BoundedFetchOptions {
  exchange: ServerExchange;
  /** The whole exchange, answer included: a server dripping bytes runs out of time too. */
  timeoutMs: number;
  maxBytes: number;
  fetch?: typeof fetch;
}

export interface BoundedResponse {
  status: number;
  ok: boolean;
  statusText: string;
  headers: Headers;
  body: Buffer;
}

/** What undici's errors mean, in the words perf and status already use. */
export function connectionWords(err: unknown): string {
  const e = err as { message?: string; code?: string; cause?: { code?: string; message?: string } } | undefined;
  const code = e?.cause?.code ?? e?.code;
  if (code === "ECONNREFUSED") return "connection refused";
  if (code === "ECONNRESET" || code === "EPIPE") return "connection reset";
  if (code === "UND_ERR_SOCKET") return "the connection closed";
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return "host not found";
  if (code === "EHOSTUNREACH" || code === "ENETUNREACH") return "host unreachable";
  if (typeof code === "string" && code.startsWith("HPE_")) return `not an HTTP answer (${code})`;
  return e?.cause?.message ?? e?.message ?? String(err);
}

const seconds = (ms: number) => `${ms >= 1000 ? (ms / 1000).toFixed(ms % 1000 ? 1 : 0) : ms / 1000} s`;

/**
 * fetch with the whole exchange bounded in time and the answer in size. Every way it can fail is a
 * ServerConnectionError (refused, reset, closed before the whole answer, out of time) or a
 * ServerResponseError (more than `maxBytes`, announced or sent), each naming the exchange.
 */
export async function fetchBounded(
  url: string,
  init: Omit<RequestInit, "signal">,
  o: BoundedFetchOptions,
): Promise<BoundedResponse> {
  const signal = AbortSignal.timeout(o.timeoutMs);
  let res: Response;
  try {
    res = await (o.fetch ?? fetch)(url, { ...init, signal });
  } catch (err) {
    throw new ServerConnectionError(
      o.exchange,
      signal.aborted
        ? `did not answer within ${seconds(o.timeoutMs)}`
        : `could not be reached (${connectionWords(err)})`,
      { cause: err },
    );
  }
  const body = await readBounded(res, signal, o);
  return { status: res.status, ok: res.ok, statusText: res.statusText, headers: res.headers, body };
}

/** An answer's body, at most `maxBytes` of it, read before `signal` (the exchange's deadline) fires. */
export async function readBounded(
  res: Response,
  signal: AbortSignal,
  o: Pick<BoundedFetchOptions, "exchange" | "maxBytes" | "timeoutMs">,
): Promise<Buffer> {
  const limit = `triton-dev's ${formatBytes(o.maxBytes)} limit for this answer`;
  const declared = Number(res.headers.get("content-length") ?? NaN);
  if (Number.isFinite(declared) && declared > o.maxBytes) {
    await res.body?.cancel().catch(() => undefined);
    throw new ServerResponseError(o.exchange, `announced an answer of ${formatBytes(declared)}, over ${limit}`);
  }
  if (!res.body) return Buffer.alloc(0);
  const reader = res.body.getReader();
  const parts: Uint8Array[] = [];
  let received = 0;
  for (;;) {
    let chunk: Awaited<ReturnType<typeof reader.read>>;
    try {
      chunk = await reader.read();
    } catch (err) {
      throw new ServerConnectionError(
        o.exchange,
        signal.aborted
          ? `sent only ${formatBytes(received)} of its answer within ${seconds(o.timeoutMs)}`
          : `cut its answer off after ${formatBytes(received)} (${connectionWords(err)})`,
        { cause: err },
      );
    }
    if (chunk.done) break;
    received += chunk.value.byteLength;
    if (received > o.maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new ServerResponseError(o.exchange, `sent an answer larger than ${limit}`);
    }
    parts.push(chunk.value);
  }
  return Buffer.concat(parts, received);
}

/** Ask for the status only: the body, whatever it is, is dropped unread. */
export async function fetchStatus(
  url: string,
  init: Omit<RequestInit, "signal">,
  o: Omit<BoundedFetchOptions, "maxBytes">,
): Promise<number> {
  const signal = AbortSignal.timeout(o.timeoutMs);
  let res: Response;
  try {
    res = await (o.fetch ?? fetch)(url, { ...init, signal });
  } catch (err) {
    throw new ServerConnectionError(
      o.exchange,
      signal.aborted
        ? `did not answer within ${seconds(o.timeoutMs)}`
        : `could not be reached (${connectionWords(err)})`,
      { cause: err },
    );
  }
  await res.body?.cancel().catch(() => undefined);
  return res.status;
}
