import http2 from "node:http2";
import net from "node:net";
import { status } from "@grpc/grpc-js";
import { INFER_RESPONSE_LIMIT } from "../net/bounded-fetch.js";
import { TritonGrpcError, type InferStream } from "./grpc-client.js";
import { decodeStreamMessage, type StreamMessage } from "./stream-message.js";

const PATH = "/inference.GRPCInferenceService/ModelStreamInfer";
/** gRPC's length-prefixed message header: a compressed flag and a big-endian length. */
const HEADER = 5;
// A stream's and the connection's receive window. Responses keep coming while the load
// generator's thread waits for a CPU (a loaded machine); a window the server never runs out of
// means it never waits for the client's WINDOW_UPDATE, and fewer of them are sent.
const WINDOW = 16 * 1024 * 1024;

export interface StreamHandlers {
  onMessage: (m: StreamMessage) => void;
  /** Once, with the call's error when it ended with a non-OK status (CANCELLED after `cancel()`). */
  onEnd: (err: TritonGrpcError | undefined) => void;
}

/** gRPC's status of a finished call, from its headers or trailers. */
function statusOf(h: http2.IncomingHttpHeaders): { code: number; message: string } | undefined {
  const raw = h["grpc-status"];
  if (raw === undefined) return undefined;
  const message = typeof h["grpc-message"] === "string" ? h["grpc-message"] : "";
  let text = message;
  try {
    text = decodeURIComponent(message);
  } catch {
    // Not percent-encoded after all: as sent.
  }
  return { code: Number(raw), message: text };
}

/**
 * Triton's ModelStreamInfer over one HTTP/2 connection, spoken directly: each message framed and
 * unframed here and read with the lean scan (`stream-message.ts`), every stream a plain HTTP/2
 * request. A streamed request's tens of responses each cost grpc-js a trip through its stream
 * decoder, call interceptors and an object-mode stream before the caller sees them (about 10 µs a
 * message on the 2-core machine); the load generator reads every one before it can send the next
 * request, so that cost is on the critical path. Control calls keep using grpc-js
 * (`TritonGrpcClient`).
 */
export class GrpcStreamChannel {
  private session: http2.ClientHttp2Session | undefined;
  /** Why the session failed (refused, reset), for the streams it takes down. */
  private sessionError: Error | undefined;
  /** Each open stream's cancel. */
  private readonly streams = new Set<() => void>();
  private readonly framed = new WeakMap<Buffer, Buffer>();
  private closed = false;

  constructor(readonly address: string) {}

  private connect(): http2.ClientHttp2Session {
    if (this.session && !this.session.closed && !this.session.destroyed) return this.session;
    const url = new URL(`http://${this.address}`);
    const host = url.hostname.replace(/^\[|\]$/g, "");
    const port = Number(url.port || 80);
    const session = http2.connect(url.origin, {
      // No Nagle: a request is one small write, sent as soon as the previous request completes.
      createConnection: () => net.connect({ host, port, noDelay: true }),
      settings: { initialWindowSize: WINDOW },
    });
    session.once("connect", () => {
      if (!session.destroyed) session.setLocalWindowSize(WINDOW);
    });
    this.sessionError = undefined;
    session.on("error", (err: Error) => {
      this.sessionError = err;
    });
    session.unref();
    this.session = session;
    return session;
  }

  private frame(request: Buffer): Buffer {
    let f = this.framed.get(request);
    if (!f) {
      f = Buffer.allocUnsafe(HEADER + request.length);
      f[0] = 0;
      f.writeUInt32BE(request.length, 1);
      request.copy(f, HEADER);
      this.framed.set(request, f);
    }
    return f;
  }

  openStream(handlers: StreamHandlers): InferStream {
    let ended = false;
    let cancelled = false;
    let final: { code: number; message: string } | undefined;
    let failure: Error | undefined;
    const end = (err: TritonGrpcError | undefined) => {
      if (ended) return;
      ended = true;
      handlers.onEnd(err);
    };
    if (this.closed) {
      queueMicrotask(() => end(new TritonGrpcError(status.CANCELLED, "channel closed", "ModelStreamInfer")));
      return { write: () => undefined, end: () => undefined, cancel: () => undefined };
    }
    const s = this.connect().request(
      { ":method": "POST", ":path": PATH, "content-type": "application/grpc", te: "trailers" },
      { endStream: false },
    );
    const cancel = () => {
      if (ended || s.closed) return;
      cancelled = true;
      s.close(http2.constants.NGHTTP2_CANCEL);
    };
    this.streams.add(cancel);
    // A message split across DATA frames: its chunks until `need` bytes (its header and body)
    // have come, then joined once (a large answer arrives in many frames).
    let parts: Buffer[] = [];
    let have = 0;
    let need = HEADER;
    s.on("response", (h) => {
      if (h[":status"] !== 200)
        final ??= { code: status.UNKNOWN, message: `HTTP status ${String(h[":status"])} from ${this.address}` };
      // A call that fails at once answers with its status in the headers (trailers-only).
      final ??= statusOf(h);
    });
    s.on("trailers", (h) => {
      final ??= statusOf(h);
    });
    // The server's end of the call is the call's end: HTTP/2 keeps a stream half-open until this
    // side ends too, and 'close' (which reports the status) waits for that.
    s.on("end", () => {
      if (!s.closed) s.close();
    });
    const broken = (code: number, message: string) => {
      final ??= { code, message };
      parts = [];
      s.close(http2.constants.NGHTTP2_CANCEL);
    };
    s.on("data", (chunk: Buffer) => {
      if (ended || cancelled || final) return;
      parts.push(chunk);
      have += chunk.length;
      if (have < need) return;
      const b = parts.length === 1 ? parts[0]! : Buffer.concat(parts, have);
      parts = [];
      have = 0;
      need = HEADER;
      let at = 0;
      while (b.length - at >= HEADER) {
        const n = b.readUInt32BE(at + 1);
        if (n > INFER_RESPONSE_LIMIT)
          return broken(
            status.RESOURCE_EXHAUSTED,
            `a message of ${n} bytes announced, over triton-dev's ${INFER_RESPONSE_LIMIT / 1024 / 1024} MiB limit for one response`,
          );
        if (b.length - at - HEADER < n) {
          need = HEADER + n;
          break;
        }
        if (b[at] !== 0)
          // No compression was offered (no grpc-accept-encoding), so none may come.
          return broken(status.INTERNAL, "a compressed message, though none was accepted");
        const m = b.subarray(at + HEADER, at + HEADER + n);
        at += HEADER + n;
        let message: StreamMessage;
        try {
          message = decodeStreamMessage(m);
        } catch (err) {
          return broken(
            status.INTERNAL,
            `a message that is not a ModelStreamInferResponse (${n} bytes: ${(err as Error).message})`,
          );
        }
        handlers.onMessage(message);
        if (ended || cancelled) return;
      }
      if (at < b.length) {
        // The rest of a message still coming: copied out, so the chunk it was in can go.
        const rest = Buffer.from(b.subarray(at));
        parts = [rest];
        have = rest.length;
      }
    });
    s.on("error", (err: Error) => {
      failure ??= err;
    });
    s.on("close", () => {
      this.streams.delete(cancel);
      if (cancelled) return end(new TritonGrpcError(status.CANCELLED, "Cancelled on client", "ModelStreamInfer"));
      // A message we could not read (`broken`) ended the stream from this side.
      if (final && final.code !== status.OK)
        return end(new TritonGrpcError(final.code, final.message, "ModelStreamInfer"));
      if (final) return end(undefined);
      // Ended without a status: the connection failed (refused, reset), as grpc-js reports it, or
      // the server reset the stream.
      const lost =
        this.sessionError ??
        (failure && "code" in failure && failure.code !== "ERR_HTTP2_STREAM_ERROR" ? failure : undefined);
      if (lost) {
        // grpc-js's words for a connection that never came up, which perf reports as refused.
        const refused = /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ETIMEDOUT|connect /.test(lost.message);
        return end(
          new TritonGrpcError(
            status.UNAVAILABLE,
            refused ? `No connection established: ${lost.message}` : lost.message,
            "ModelStreamInfer",
          ),
        );
      }
      end(
        new TritonGrpcError(
          status.INTERNAL,
          `the stream was reset without a status (HTTP/2 code ${s.rstCode ?? "none"})`,
          "ModelStreamInfer",
        ),
      );
    });
    return {
      write: (request) => {
        if (!s.closed && !s.destroyed) s.write(this.frame(request));
      },
      end: () => {
        if (!s.closed && !s.destroyed) s.end();
      },
      cancel,
    };
  }

  close(): void {
    this.closed = true;
    for (const cancel of [...this.streams]) cancel();
    this.session?.close();
    this.session = undefined;
  }
}
