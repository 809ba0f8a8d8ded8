import type { FileHandle } from "node:fs/promises";

/**
 * A protobuf wire-format walker over a file, reading it in small chunks at positions: a field it is
 * not asked to read is skipped by moving the position, never read, so a 2 GB model whose weights
 * are one length-delimited field costs a few reads. Every length is checked against the end of the
 * message that holds it, so a truncated or corrupted file ends in a WireError, never in a read past
 * the file or an allocation of its declared size.
 */

export type WireProblem =
  /** A field runs past the end of the file or of its enclosing message. */
  | "truncated"
  /** Not protobuf: a bad wire type, a varint longer than 10 bytes, a group left open. */
  | "corrupt"
  /** A part lint decodes (a tensor's description) is larger than any real one. */
  | "too-large";

export class WireError extends Error {
  override name = "WireError";
  constructor(
    readonly problem: WireProblem,
    /** Byte offset in the file where the bad field starts. */
    readonly offset: number,
    message: string,
  ) {
    super(message);
  }
}

export const WIRE_VARINT = 0;
export const WIRE_I64 = 1;
export const WIRE_LEN = 2;
export const WIRE_START_GROUP = 3;
export const WIRE_END_GROUP = 4;
export const WIRE_I32 = 5;
/** protobuf's own recursion limit. */
const MAX_GROUP_DEPTH = 100;

export interface Field {
  number: number;
  wireType: number;
  /** Offset of the field's tag. */
  at: number;
  /** The value of a varint field (as a Number: lint needs small ones only, larger are clamped). */
  varint?: number;
  /** For a length-delimited field: where its bytes start and how many there are. */
  start?: number;
  length?: number;
}

const CHUNK = 64 * 1024;

export class WireFile {
  private buf = Buffer.alloc(CHUNK);
  private bufStart = 0;
  private bufLen = 0;
  /** How many bytes were read from the file, for the bench and the bounded-read tests. */
  bytesRead = 0;

  constructor(
    private readonly fh: FileHandle,
    readonly size: number,
  ) {}

  private async fill(pos: number): Promise<void> {
    const { bytesRead } = await this.fh.read(this.buf, 0, CHUNK, pos);
    this.bufStart = pos;
    this.bufLen = bytesRead;
    this.bytesRead += bytesRead;
  }

  private async byteAt(pos: number, end: number): Promise<number> {
    if (pos >= end) throw new WireError("truncated", pos, `the file ends inside a field at byte ${pos}`);
    if (pos < this.bufStart || pos >= this.bufStart + this.bufLen) {
      await this.fill(pos);
      if (this.bufLen === 0) throw new WireError("truncated", pos, `the file ends at byte ${pos}, inside a field`);
    }
    return this.buf[pos - this.bufStart]!;
  }

  /** A varint at `pos`; returns its value (clamped to 2^53) and the position after it. */
  async varint(pos: number, end: number): Promise<{ value: number; next: number }> {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      const b = await this.byteAt(pos + i, end);
      value += (b & 0x7f) * scale;
      scale *= 128;
      if ((b & 0x80) === 0) return { value: Math.min(value, Number.MAX_SAFE_INTEGER), next: pos + i + 1 };
    }
    throw new WireError("corrupt", pos, `a varint at byte ${pos} is longer than 10 bytes`);
  }

  /** The fields of the message in [start, end), one by one; a length-delimited one is not read. */
  async *fields(start: number, end: number): AsyncGenerator<Field> {
    let pos = start;
    while (pos < end) {
      const at = pos;
      const tag = await this.varint(pos, end);
      pos = tag.next;
      const number = Math.floor(tag.value / 8);
      const wireType = tag.value % 8;
      if (number === 0) throw new WireError("corrupt", at, `field number 0 at byte ${at}`);
      switch (wireType) {
        case WIRE_VARINT: {
          const v = await this.varint(pos, end);
          pos = v.next;
          yield { number, wireType, at, varint: v.value };
          break;
        }
        case WIRE_I64:
        case WIRE_I32: {
          const n = wireType === WIRE_I64 ? 8 : 4;
          if (pos + n > end) throw new WireError("truncated", at, `a ${n}-byte field at byte ${at} runs past its end`);
          pos += n;
          yield { number, wireType, at };
          break;
        }
        case WIRE_LEN: {
          const len = await this.varint(pos, end);
          pos = len.next;
          if (len.value > end - pos)
            throw new WireError(
              "truncated",
              at,
              `field ${number} at byte ${at} declares ${len.value} bytes, but only ${end - pos} remain`,
            );
          yield { number, wireType, at, start: pos, length: len.value };
          pos += len.value;
          break;
        }
        case WIRE_START_GROUP:
          // A group is an unknown field to ONNX's schema (it has none): skipped, as protobuf does.
          pos = await this.skipGroup(number, pos, end, at);
          break;
        default:
          throw new WireError("corrupt", at, `field ${number} at byte ${at} has wire type ${wireType}`);
      }
    }
  }

  /** Past the end-group tag of group `number` whose fields start at `pos`; nested at most MAX_GROUP_DEPTH deep. */
  private async skipGroup(number: number, pos: number, end: number, at: number, depth = 0): Promise<number> {
    if (depth >= MAX_GROUP_DEPTH) throw new WireError("corrupt", at, `groups nested deeper than ${MAX_GROUP_DEPTH}`);
    while (pos < end) {
      const tagAt = pos;
      const tag = await this.varint(pos, end);
      pos = tag.next;
      const n = Math.floor(tag.value / 8);
      const wt = tag.value % 8;
      if (wt === WIRE_END_GROUP) {
        if (n !== number) throw new WireError("corrupt", tagAt, `group ${number} at byte ${at} ends as group ${n}`);
        return pos;
      }
      if (wt === WIRE_VARINT) pos = (await this.varint(pos, end)).next;
      else if (wt === WIRE_I64) pos += 8;
      else if (wt === WIRE_I32) pos += 4;
      else if (wt === WIRE_LEN) {
        const len = await this.varint(pos, end);
        pos = len.next + len.value;
      } else if (wt === WIRE_START_GROUP) pos = await this.skipGroup(n, pos, end, tagAt, depth + 1);
      else throw new WireError("corrupt", tagAt, `field ${n} at byte ${tagAt} has wire type ${wt}`);
      if (pos > end) throw new WireError("truncated", tagAt, `field ${n} at byte ${tagAt} runs past its end`);
    }
    throw new WireError("truncated", at, `group ${number} at byte ${at} has no end`);
  }

  /** The bytes of a length-delimited field, refused beyond `max` (nothing real lint decodes is that big). */
  async bytes(field: Field, max: number, what: string): Promise<Uint8Array> {
    const length = field.length ?? 0;
    const start = field.start ?? 0;
    if (length > max)
      throw new WireError(
        "too-large",
        field.at,
        `${what} at byte ${field.at} is ${length} bytes (at most ${max} read)`,
      );
    // Names and tensor descriptions are small and sit next to each other: served from the chunk.
    if (length <= CHUNK) {
      if (start < this.bufStart || start + length > this.bufStart + this.bufLen) await this.fill(start);
      if (start + length > this.bufStart + this.bufLen)
        throw new WireError("truncated", field.at, `the file ends inside ${what}`);
      return Uint8Array.prototype.slice.call(this.buf, start - this.bufStart, start - this.bufStart + length);
    }
    const out = Buffer.alloc(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await this.fh.read(out, done, length - done, start + done);
      if (bytesRead === 0) throw new WireError("truncated", field.at, `the file ends inside ${what}`);
      done += bytesRead;
      this.bytesRead += bytesRead;
    }
    return out;
  }
}
