import net from "node:net";
import { performance } from "node:perf_hooks";
import { TritonDevError } from "../errors.js";

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
}

interface Pending {
  raw: Buffer;
  resolve: (r: PooledResponse) => void;
  reject: (e: Error) => void;
  startMs: number;
}

const CRLFCRLF = Buffer.from("\r\n\r\n");
const EMPTY = Buffer.alloc(0);

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

class Connection {
  readonly socket: net.Socket;
  private current: (Pending & { sentMs: number; firstByteMs: number }) | undefined;
  private buf: Buffer = EMPTY;
  private head:
    { status: number; text: string; bodyStart: number; length: number; chunked: boolean; close: boolean } | undefined;
  private timer: NodeJS.Timeout | undefined;
  closed = false;

  constructor(
    host: string,
    port: number,
    private readonly onIdle: (c: Connection) => void,
    private readonly onClosed: (c: Connection) => void,
    private readonly requestTimeoutMs: number | undefined,
  ) {
    this.socket = net.connect({ host, port });
    this.socket.setNoDelay(true);
    this.socket.on("data", (d: Buffer) => this.onData(d));
    this.socket.on("error", (err: NodeJS.ErrnoException) => this.fail(err.code ?? "ECONNERROR", err.message));
    this.socket.on("close", () => this.fail("ECONNRESET", "the server closed the connection before answering"));
  }

  get busy(): boolean {
    return this.current !== undefined;
  }

  send(p: Pending): void {
    this.current = { ...p, sentMs: 0, firstByteMs: 0 };
    const cur = this.current;
    if (this.requestTimeoutMs !== undefined) {
      this.timer = setTimeout(() => {
        this.fail("ETIMEDOUT", `no response within ${this.requestTimeoutMs} ms`);
      }, this.requestTimeoutMs);
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
    const cur = this.current;
    if (!cur) {
      // Bytes nobody asked for: the framing is lost, so the connection is not reusable.
      this.socket.destroy();
      return;
    }
    if (cur.firstByteMs === 0) cur.firstByteMs = performance.now();
    this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
    this.parse();
  }

  private parse(): void {
    if (!this.head) {
      const end = this.buf.indexOf(CRLFCRLF);
      if (end < 0) return;
      // Only what frames the body is read here; other headers stay text until someone asks.
      const text = this.buf.toString("latin1", 0, end + 2);
      const status = /^HTTP\/1\.[01] \d{3}/.test(text) ? Number(text.slice(9, 12)) : NaN;
      if (!Number.isFinite(status)) {
        this.fail("EPROTO", `not an HTTP response: ${JSON.stringify(text.slice(0, 60))}`);
        return;
      }
      const lower = text.toLowerCase();
      const length = Number(headerIn(lower, "content-length") ?? 0);
      const chunked = (headerIn(lower, "transfer-encoding") ?? "").includes("chunked");
      const close = (headerIn(lower, "connection") ?? "").includes("close");
      this.head = { status, text, bodyStart: end + 4, length, chunked, close };
    }
    const h = this.head;
    if (h.chunked) {
      const body = this.dechunk(h.bodyStart);
      if (body) this.finish(body.data, body.end);
      return;
    }
    if (this.buf.length - h.bodyStart < h.length) return;
    this.finish(this.buf.subarray(h.bodyStart, h.bodyStart + h.length), h.bodyStart + h.length);
  }

  /** The whole chunked body once it has arrived, else undefined. */
  private dechunk(start: number): { data: Buffer; end: number } | undefined {
    const parts: Buffer[] = [];
    let pos = start;
    for (;;) {
      const eol = this.buf.indexOf("\r\n", pos, "latin1");
      if (eol < 0) return undefined;
      const size = parseInt(this.buf.toString("latin1", pos, eol).split(";")[0]!, 16);
      if (!Number.isFinite(size)) {
        this.fail("EPROTO", "bad chunk size in response");
        return undefined;
      }
      if (size === 0) {
        const trailerEnd = this.buf.indexOf(CRLFCRLF, eol);
        if (trailerEnd >= 0) return { data: Buffer.concat(parts), end: trailerEnd + 4 };
        if (this.buf.length >= eol + 4 && this.buf.toString("latin1", eol, eol + 4) === "\r\n\r\n")
          return { data: Buffer.concat(parts), end: eol + 4 };
        return undefined;
      }
      if (this.buf.length < eol + 2 + size + 2) return undefined;
      parts.push(this.buf.subarray(eol + 2, eol + 2 + size));
      pos = eol + 2 + size + 2;
    }
  }

  private finish(body: Buffer, end: number): void {
    const cur = this.current!;
    const h = this.head!;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    // Socket chunks are never reused by Node, so the body can point into them without a copy.
    this.buf = end < this.buf.length ? this.buf.subarray(end) : EMPTY;
    this.head = undefined;
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
    if (h.close) {
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
  request(raw: Buffer): Promise<PooledResponse> {
    return new Promise((resolve, reject) => {
      if (this.closed) {
        reject(new HttpConnectionError("ECLOSED", "the connection pool is closed"));
        return;
      }
      this.dispatch({ raw, resolve, reject, startMs: performance.now() });
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
