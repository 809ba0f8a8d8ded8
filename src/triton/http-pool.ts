import net from "node:net";
import { performance } from "node:perf_hooks";
import { TritonDevError } from "../errors.js";
import { formatBytes, INFER_RESPONSE_LIMIT } from "../net/bounded-fetch.js";

/**
 * A minimal HTTP/1.1 client for load generation: a pool of keep-alive connections, each carrying
 * one request at a time, sending request bytes built once up front. Node's http module and fetch
 * spend most of their time per request on header objects and streams; this pool parses only the
 * status line and the headers that frame the body, so the generator measures the server rather
 * than itself (bench/generator-vs-autocannon.mjs compares it with autocannon).
 */

export interface PooledResponse {
  status: number;
  /** The status line and headers as received; read one with `responseHeader`. */
  head: string;
  body: Buffer;
  /** performance.now() marks: request handed to the pool, fully written, first byte back, done. */
  startMs: number;
  sentMs: number;
  firstByteMs: number;
  endMs: number;
}

/** The connection failed or closed before a whole response arrived. */
export class HttpConnectionError extends TritonDevError {
  override name = "HttpConnectionError";
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface KeepAlivePoolOptions {
  /** Connections opened at most; further requests wait for a free one. */
  maxConnections: number;
  /** A request without a complete response after this long fails with code ETIMEDOUT. */
  requestTimeoutMs?: number;
  /** A response body over this many bytes (announced or sent) fails with code ETOOBIG. */
  maxResponseBytes?: number;
}

export interface PoolRequestOptions {
  /** Keep a 2xx response's body (a load generator only counts it: dropped, it costs no memory). */
  keepBody?: boolean;
  /** This request's own deadline, in place of the pool's. */
  timeoutMs?: number;
}

interface Pending {
  raw: Buffer;
  resolve: (r: PooledResponse) => void;
  reject: (e: Error) => void;
  startMs: number;
  keepBody: boolean;
  timeoutMs: number | undefined;
}

const CRLF = Buffer.from("\r\n");
const CRLFCRLF = Buffer.from("\r\n\r\n");
const EMPTY = Buffer.alloc(0);
/** A status line and headers, a chunk-size line, trailers: Triton's are a few hundred bytes. */
const MAX_HEAD_BYTES = 64 * 1024;
const MAX_LINE_BYTES = 1024;

/** The value of header `name` (lower case) in a response head, itself lower-cased, or undefined. */
function headerIn(lower: string, name: string, head = lower): string | undefined {
  const at = lower.indexOf(`\r\n${name}:`);
  if (at < 0) return undefined;
  const start = at + name.length + 3;
  const end = head.indexOf("\r\n", start);
  return head.slice(start, end < 0 ? head.length : end).trim();
}

export function responseHeader(r: Pick<PooledResponse, "head">, name: string): string | undefined {
  return headerIn(r.head.toLowerCase(), name.toLowerCase(), r.head);
}

/**
 * Where the parser is in a response: its head, a body of known length, a chunked body (a chunk's
 * size line, its data, the CRLF after it, the trailers), or a body that ends with the connection.
 */
type Phase = "head" | "length" | "chunk-size" | "chunk-data" | "chunk-end" | "trailers" | "until-close";

/**
 * One keep-alive connection. Its response parser is incremental: every byte is looked at once, a
 * body's bytes are kept (or, for a load generator, only counted) as the chunks they came in, and
 * nothing the server says (a Content-Length, a chunk size) is allocated before it arrives, so a
 * server that sends without end costs at most the limit.
 */
class Connection {
  readonly socket: net.Socket;
  private current: (Pending & { sentMs: number; firstByteMs: number }) | undefined;
  private phase: Phase = "head";
  /** Bytes of the head, a chunk-size line or the trailers, until they are whole. */
  private pendingText: Buffer = EMPTY;
  private head: { status: number; text: string; close: boolean } | undefined;
  /** Bytes left of the body (length) or of the current chunk (chunk-data, chunk-end). */
  private remaining = 0;
  private parts: Buffer[] = [];
  private bodyBytes = 0;
  private timer: NodeJS.Timeout | undefined;
  closed = false;

  constructor(
    host: string,
    port: number,
    private readonly onIdle: (c: Connection) => void,
    private readonly onClosed: (c: Connection) => void,
    private readonly requestTimeoutMs: number | undefined,
    private readonly maxBodyBytes: number,
  ) {
    this.socket = net.connect({ host, port });
    this.socket.setNoDelay(true);
    this.socket.on("data", (d: Buffer) => this.onData(d));
    this.socket.on("error", (err: NodeJS.ErrnoException) => this.fail(err.code ?? "ECONNERROR", err.message));
    this.socket.on("close", () => {
      if (this.current && this.phase === "until-close") return this.finish();
      const cur = this.current;
      this.fail(
        "ECONNRESET",
        !cur || cur.firstByteMs === 0
          ? "the server closed the connection before answering"
          : `the server closed the connection ${this.head ? `after ${formatBytes(this.bodyBytes)} of the response body` : "in the middle of the response's headers"}`,
      );
    });
  }

  get busy(): boolean {
    return this.current !== undefined;
  }

  send(p: Pending): void {
    this.current = { ...p, sentMs: 0, firstByteMs: 0 };
    const cur = this.current;
    const timeoutMs = p.timeoutMs ?? this.requestTimeoutMs;
    if (timeoutMs !== undefined) {
      this.timer = setTimeout(() => {
        this.fail(
          "ETIMEDOUT",
          `no complete response within ${timeoutMs} ms${cur.firstByteMs ? ` (${formatBytes(this.bodyBytes)} of its body arrived)` : ""}`,
        );
      }, timeoutMs);
    }
    if (this.socket.connecting || p.raw.length > 65536) {
      this.socket.write(p.raw, () => {
        cur.sentMs = performance.now();
      });
      return;
    }
    // A small request on an open connection goes to the kernel inside write(); skipping the
    // callback saves an allocation and a tick per request at high rates.
    this.socket.write(p.raw);
    if (this.socket.writableLength === 0) cur.sentMs = performance.now();
  }

  private onData(d: Buffer): void {
    let at = 0;
    while (at < d.length) {
      const cur = this.current;
      if (!cur) {
        // Bytes nobody asked for: the framing is lost, so the connection is not reusable.
        this.close();
        return;
      }
      if (cur.firstByteMs === 0) cur.firstByteMs = performance.now();
      const used = this.step(d, at);
      if (used < 0) return; // failed: the connection is closed
      at += used;
    }
  }

  /** Parse from `d[at]` on in the current phase; the bytes used, or -1 once the request failed. */
  private step(d: Buffer, at: number): number {
    switch (this.phase) {
      case "head":
      case "chunk-size":
      case "trailers": {
        const max = this.phase === "chunk-size" ? MAX_LINE_BYTES : MAX_HEAD_BYTES;
        const end = this.phase === "chunk-size" ? CRLF : CRLFCRLF;
        // Search from just before the new bytes: the terminator may straddle two reads.
        const before = this.pendingText.length;
        const text = before ? Buffer.concat([this.pendingText, d.subarray(at)]) : d.subarray(at);
        // Trailers may be absent altogether: "0\r\n" then one CRLF.
        const found =
          this.phase === "trailers" && text.length >= 2 && text[0] === 13 && text[1] === 10
            ? 0
            : text.indexOf(end, Math.max(0, before - end.length + 1));
        if (found < 0) {
          if (text.length > max) return (this.fail("EPROTO", this.tooLong()), -1);
          this.pendingText = Buffer.from(text);
          return d.length - at;
        }
        const endAt = this.phase === "trailers" && found === 0 ? 2 : found + end.length;
        if (endAt > max + end.length) return (this.fail("EPROTO", this.tooLong()), -1);
        this.pendingText = EMPTY;
        const used = endAt - before;
        if (this.phase === "head") {
          if (!this.onHead(text.toString("latin1", 0, found + 2))) return -1;
        } else if (this.phase === "chunk-size") {
          const n = parseInt(text.toString("latin1", 0, found).split(";")[0]!.trim(), 16);
          if (!Number.isFinite(n) || n < 0) return (this.fail("EPROTO", "a bad chunk size"), -1);
          if (n === 0) this.phase = "trailers";
          else {
            if (this.bodyBytes + n > this.maxBodyBytes)
              return (this.fail("ETOOBIG", this.overLimit(this.bodyBytes + n)), -1);
            this.phase = "chunk-data";
            this.remaining = n;
          }
        } else this.finish();
        return used;
      }
      case "length":
      case "chunk-data":
      case "until-close": {
        const take = this.phase === "until-close" ? d.length - at : Math.min(this.remaining, d.length - at);
        this.bodyBytes += take;
        if (this.bodyBytes > this.maxBodyBytes) return (this.fail("ETOOBIG", this.overLimit(this.bodyBytes)), -1);
        if (this.keep()) this.parts.push(d.subarray(at, at + take));
        if (this.phase === "until-close") return take;
        this.remaining -= take;
        if (this.remaining === 0) {
          if (this.phase === "length") this.finish();
          else {
            this.phase = "chunk-end";
            this.remaining = 2;
          }
        }
        return take;
      }
      case "chunk-end": {
        const take = Math.min(this.remaining, d.length - at);
        this.remaining -= take;
        if (this.remaining === 0) this.phase = "chunk-size";
        return take;
      }
    }
  }

  private tooLong(): string {
    return this.phase === "head"
      ? `headers that run past ${MAX_HEAD_BYTES / 1024} KiB (no HTTP server sends such)`
      : this.phase === "trailers"
        ? `trailers that run past ${MAX_HEAD_BYTES / 1024} KiB`
        : "a chunk-size line longer than 1 KiB";
  }

  private overLimit(n: number): string {
    return `a response body over triton-dev's ${formatBytes(this.maxBodyBytes)} limit for one response (${formatBytes(n)} ${this.phase === "head" ? "announced" : "so far"})`;
  }

  /** Only the bodies someone reads are kept: a probe's, and every error's (it says what went wrong). */
  private keep(): boolean {
    return this.current!.keepBody || this.head!.status < 200 || this.head!.status >= 300;
  }

  private onHead(text: string): boolean {
    // Only what frames the body is read here; other headers stay text until someone asks.
    const status = /^HTTP\/1\.[01] \d{3}/.test(text) ? Number(text.slice(9, 12)) : NaN;
    if (!Number.isFinite(status)) {
      this.fail("EPROTO", `bytes that are not an HTTP response: ${JSON.stringify(text.slice(0, 60))}`);
      return false;
    }
    const lower = text.toLowerCase();
    const lengthText = headerIn(lower, "content-length");
    const chunked = (headerIn(lower, "transfer-encoding") ?? "").includes("chunked");
    const close = (headerIn(lower, "connection") ?? "").includes("close");
    this.head = { status, text, close };
    this.parts = [];
    this.bodyBytes = 0;
    if (chunked) {
      this.phase = "chunk-size";
      return true;
    }
    if (lengthText === undefined) {
      // No length and not chunked: the body runs until the server closes the connection.
      this.phase = "until-close";
      return true;
    }
    const length = Number(lengthText);
    if (!/^\d+$/.test(lengthText) || !Number.isSafeInteger(length)) {
      this.fail("EPROTO", `a bad Content-Length in the response: ${JSON.stringify(lengthText.slice(0, 40))}`);
      return false;
    }
    if (length > this.maxBodyBytes) {
      this.fail("ETOOBIG", this.overLimit(length));
      return false;
    }
    if (length === 0) this.finish();
    else {
      this.phase = "length";
      this.remaining = length;
    }
    return true;
  }

  private finish(): void {
    const cur = this.current!;
    const h = this.head!;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    // Socket chunks are never reused by Node, so the body can point into them without a copy.
    const body = this.parts.length === 1 ? this.parts[0]! : this.parts.length ? Buffer.concat(this.parts) : EMPTY;
    const untilClose = this.phase === "until-close";
    this.parts = [];
    this.head = undefined;
    this.phase = "head";
    this.current = undefined;
    const endMs = performance.now();
    cur.resolve({
      status: h.status,
      head: h.text,
      body,
      startMs: cur.startMs,
      sentMs: cur.sentMs || cur.firstByteMs || endMs,
      firstByteMs: cur.firstByteMs,
      endMs,
    });
    if (h.close || untilClose) {
      this.close();
      return;
    }
    this.onIdle(this);
  }

  private fail(code: string, message: string): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const cur = this.current;
    this.current = undefined;
    this.parts = [];
    if (cur) cur.reject(new HttpConnectionError(code, message));
    if (!this.closed) this.close();
  }

  /** Close the connection; a request still on it fails with ECLOSED. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const cur = this.current;
    this.current = undefined;
    this.parts = [];
    cur?.reject(new HttpConnectionError("ECLOSED", "the connection was closed"));
    this.socket.destroy();
    this.onClosed(this);
  }
}

export class KeepAliveHttpPool {
  private readonly idle: Connection[] = [];
  private readonly all = new Set<Connection>();
  private readonly waiting: Pending[] = [];
  private closed = false;

  constructor(
    readonly host: string,
    readonly port: number,
    private readonly options: KeepAlivePoolOptions,
  ) {}

  get connections(): number {
    return this.all.size;
  }

  /** Send prebuilt request bytes (request line, headers and body) and resolve with the response. */
  request(raw: Buffer, options: PoolRequestOptions = {}): Promise<PooledResponse> {
    return new Promise((resolve, reject) => {
      if (this.closed) {
        reject(new HttpConnectionError("ECLOSED", "the connection pool is closed"));
        return;
      }
      this.dispatch({
        raw,
        resolve,
        reject,
        startMs: performance.now(),
        keepBody: options.keepBody ?? true,
        timeoutMs: options.timeoutMs,
      });
    });
  }

  private dispatch(p: Pending): void {
    let c: Connection | undefined;
    while ((c = this.idle.pop()) && c.closed);
    if (!c && this.all.size < this.options.maxConnections) c = this.open();
    if (c) c.send(p);
    else this.waiting.push(p);
  }

  private open(): Connection {
    const c = new Connection(
      this.host,
      this.port,
      (conn) => {
        const next = this.waiting.shift();
        if (next) conn.send(next);
        else this.idle.push(conn);
      },
      (conn) => {
        this.all.delete(conn);
        const i = this.idle.indexOf(conn);
        if (i >= 0) this.idle.splice(i, 1);
        // Requests queued behind a connection that went away get a fresh one.
        if (!this.closed && this.waiting.length && this.all.size < this.options.maxConnections) {
          const next = this.waiting.shift()!;
          this.open().send(next);
        }
      },
      this.options.requestTimeoutMs,
      this.options.maxResponseBytes ?? INFER_RESPONSE_LIMIT,
    );
    this.all.add(c);
    return c;
  }

  /** Close every connection; requests still in flight or queued fail with ECLOSED. */
  close(): void {
    this.closed = true;
    for (const p of this.waiting.splice(0))
      p.reject(new HttpConnectionError("ECLOSED", "the connection pool is closed"));
    for (const c of [...this.all]) c.close();
  }
}

/** The request line and headers of an HTTP/1.1 POST, followed by its body, as one buffer. */
export function buildPostRequest(
  host: string,
  path: string,
  body: Buffer,
  headers: Record<string, string | number> = {},
): Buffer {
  const lines = [
    `POST ${path} HTTP/1.1`,
    `Host: ${host}`,
    `Content-Length: ${body.length}`,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    "",
    "",
  ];
  return Buffer.concat([Buffer.from(lines.join("\r\n"), "latin1"), body]);
}
