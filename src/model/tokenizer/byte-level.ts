// The byte-level alphabet of GPT-2 style BPE vocabularies, and UTF-8 encoding into a reusable buffer.
//
// Byte-level vocabularies spell every byte as one visible character: the printable Latin-1 bytes
// (0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF) stand for themselves and the other 68 bytes, in byte order, take the
// characters from U+0100 on (so a space is `Ġ` U+0120 and a newline `Ċ` U+010A). Every alphabet character
// is one UTF-16 unit, so a token's text has exactly one character per byte it stands for.

/** First character used for the bytes that are not printable Latin-1. */
const SHIFTED_BASE = 0x100;
const BYTE_VALUES = 256;

function printable(byte: number): boolean {
  return (byte >= 0x21 && byte <= 0x7e) || (byte >= 0xa1 && byte <= 0xac) || (byte >= 0xae && byte <= 0xff);
}

function buildAlphabet(): { chars: string[]; bytes: Map<number, number> } {
  const chars: string[] = new Array<string>(BYTE_VALUES);
  const bytes = new Map<number, number>();
  let shifted = 0;
  for (let b = 0; b < BYTE_VALUES; b++) {
    const code = printable(b) ? b : SHIFTED_BASE + shifted++;
    chars[b] = String.fromCharCode(code);
    bytes.set(code, b);
  }
  return { chars, bytes };
}

const ALPHABET = buildAlphabet();

/** The alphabet character that stands for each byte. */
export const BYTE_TO_CHAR: readonly string[] = ALPHABET.chars;

/** The byte an alphabet character (UTF-16 code) stands for, or undefined for other characters. */
export function byteOfChar(code: number): number | undefined {
  return ALPHABET.bytes.get(code);
}

const REPLACEMENT = 0xfffd;

/**
 * UTF-8 encoder writing into one growing buffer (TextEncoder allocates per call). Lone surrogates become
 * U+FFFD, as TextEncoder does. `encode` returns the byte count; the bytes are `buffer[0..count)`.
 */
export class Utf8Buffer {
  buffer = new Uint8Array(256);

  encode(text: string): number {
    // At most 3 bytes per UTF-16 unit (a surrogate pair is 2 units for 4 bytes).
    if (this.buffer.length < text.length * 3) this.buffer = new Uint8Array(text.length * 3);
    const out = this.buffer;
    let n = 0;
    for (let i = 0; i < text.length; i++) {
      let c = text.charCodeAt(i);
      if (c < 0x80) {
        out[n++] = c;
        continue;
      }
      if (c < 0x800) {
        out[n++] = 0xc0 | (c >> 6);
        out[n++] = 0x80 | (c & 0x3f);
        continue;
      }
      if (c >= 0xd800 && c <= 0xdfff) {
        const low = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
        if (c <= 0xdbff && low >= 0xdc00 && low <= 0xdfff) {
          const cp = 0x10000 + ((c - 0xd800) << 10) + (low - 0xdc00);
          i++;
          out[n++] = 0xf0 | (cp >> 18);
          out[n++] = 0x80 | ((cp >> 12) & 0x3f);
          out[n++] = 0x80 | ((cp >> 6) & 0x3f);
          out[n++] = 0x80 | (cp & 0x3f);
          continue;
        }
        c = REPLACEMENT;
      }
      out[n++] = 0xe0 | (c >> 12);
      out[n++] = 0x80 | ((c >> 6) & 0x3f);
      out[n++] = 0x80 | (c & 0x3f);
    }
    return n;
  }
}

/** Length of the UTF-8 sequence a lead byte starts (1 for ASCII and stray continuation bytes). */
export function utf8SequenceLength(lead: number): number {
  if (lead < 0xc0) return 1;
  if (lead < 0xe0) return 2;
  if (lead < 0xf0) return 3;
  return 4;
}

/** One char per byte (Latin-1): bytes as a Map key, so lookups compare bytes exactly. */
export function binaryString(bytes: Uint8Array, start = 0, end = bytes.length): string {
  let s = '';
  // Chunks keep String.fromCharCode's argument count small.
  const CHUNK = 4096;
  for (let i = start; i < end; i += CHUNK) {
    s += String.fromCharCode.apply(null, bytes.subarray(i, Math.min(end, i + CHUNK)) as unknown as number[]);
  }
  return s;
}
