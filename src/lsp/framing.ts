import { PassThrough } from "node:stream";
import { UserError } from "../errors.js";

/**
 * The editor broke the protocol's framing (a header without Content-Length, a length that is no
 * byte count, a body that is not the message the length promised). vscode-jsonrpc's reader drops
 * such input without a word and waits for a header that never comes, so the editor would see a
 * hung server; past a framing error nothing after it can be read, so the server says what it
 * got and exits nonzero, which editors answer by starting it again.
 */
export class LspFramingError extends UserError {
  override name = "LspFramingError";
  constructor(message: string) {
    super(`language server input: ${message}; the messages after it cannot be read, so the server stops`, {
      hint: "The editor (or the program writing to `triton-dev lsp`) must frame each message as `Content-Length: N\\r\\n\\r\\n` followed by N bytes of JSON; editors restart the server on their own.",
    });
  }
}

/** A header block past this is no LSP header (the spec's has two short fields). */
const MAX_HEADER_BYTES = 8 * 1024;
/** RFC 7230's token characters: what a header's name is made of. */
const HEADER_SO_FAR =
  /^(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+:[^\r\n]*\r\n)*(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]*(?::[^\r\n]*\r?)?)?$/;
const SEPARATOR = Buffer.from("\r\n\r\n");

const shown = (s: string): string => JSON.stringify(s.length > 60 ? `${s.slice(0, 60)}…` : s);

/**
 * The editor's byte stream, checked message by message: what is passed on is whole messages with
 * a valid header; the first framing error calls `onError` and nothing more is passed on.
 */
export function framedInput(input: NodeJS.ReadableStream, onError: (err: LspFramingError) => void): PassThrough {
  const out = new PassThrough();
  let chunks: Buffer[] = [];
  let length = 0;
  /** Bytes before the current message, for the error's position. */
  let consumed = 0;
  /** Body length of the message whose header was read; undefined while reading a header. */
  let body: number | undefined;
  let headerBytes = 0;
  let failed = false;

  const fail = (message: string) => {
    if (failed) return;
    failed = true;
    chunks = [];
    input.removeListener("data", onData);
    onError(new LspFramingError(`${message} (message at byte ${consumed})`));
  };

  const take = (n: number): Buffer => {
    const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
    const head = all.subarray(0, n);
    const rest = all.subarray(n);
    chunks = rest.length ? [rest] : [];
    length = rest.length;
    return head;
  };

  const step = (): boolean => {
    if (body === undefined) {
      const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
      chunks = all.length ? [all] : [];
      const end = all.indexOf(SEPARATOR);
      const headerText = all.subarray(0, end < 0 ? Math.min(all.length, MAX_HEADER_BYTES + 1) : end).toString("latin1");
      if (end < 0) {
        if (!HEADER_SO_FAR.test(headerText)) {
          fail(`expected a header such as "Content-Length: 123", got ${shown(headerText)}`);
        } else if (all.length > MAX_HEADER_BYTES) {
          fail(`a header of more than ${MAX_HEADER_BYTES} bytes without its end (an empty line)`);
        }
        return false;
      }
      if (end > MAX_HEADER_BYTES || !HEADER_SO_FAR.test(`${headerText}\r\n`)) {
        fail(`expected a header such as "Content-Length: 123", got ${shown(headerText)}`);
        return false;
      }
      const fields = headerText.split("\r\n").map((l) => {
        const colon = l.indexOf(":");
        return { name: l.slice(0, colon).toLowerCase(), value: l.slice(colon + 1).trim() };
      });
      const lengths = fields.filter((f) => f.name === "content-length");
      if (lengths.length === 0) {
        fail(`a header without Content-Length (${shown(headerText)})`);
        return false;
      }
      const value = lengths[0]!.value;
      if (lengths.length > 1 || !/^[0-9]{1,12}$/.test(value)) {
        fail(`Content-Length ${shown(lengths.map((l) => l.value).join(", "))} is not a byte count`);
        return false;
      }
      const n = Number(value);
      if (n < 2) {
        fail(`Content-Length ${n} is too small for a JSON-RPC message`);
        return false;
      }
      headerBytes = end + SEPARATOR.length;
      body = n;
    }
    if (length < headerBytes + body) return false;
    const message = take(headerBytes + body);
    const content = message.subarray(headerBytes).toString("utf8").trim();
    const first = content[0];
    const last = content[content.length - 1];
    if (!((first === "{" && last === "}") || (first === "[" && last === "]"))) {
      fail(
        `the ${body} bytes that Content-Length counts are not one JSON message (${shown(content)}): the length is wrong`,
      );
      return false;
    }
    consumed += message.length;
    body = undefined;
    out.write(message);
    return true;
  };

  const onData = (chunk: Buffer | string) => {
    if (failed) return;
    const b = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    chunks.push(b);
    length += b.length;
    while (!failed && step()) {
      // Every whole message in what arrived.
    }
  };
  input.on("data", onData);
  input.on("end", () => {
    if (!failed) out.end();
  });
  input.on("close", () => {
    if (!failed) out.end();
  });
  input.on("error", (err) => out.destroy(err));
  return out;
}
