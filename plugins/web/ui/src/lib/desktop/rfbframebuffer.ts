// The player's own framebuffer (docs/recordings.md, "Desktop recordings"): the recorded
// server bytes are decoded here, in typed arrays, and noVNC is handed only what changed,
// as one rectangle per step. A seek decodes from the key frame to the target without
// drawing anything in between, then draws once; noVNC's own decoders would draw every
// tile and every line as it comes (thousands of putImageData calls per key frame).
//
// The recording relay keeps the encodings whose updates decode on their own (Raw,
// CopyRect, RRE, Hextile and a few pseudo-encodings: plugins/vnc recording.py), and
// noVNC asked the server for its pixel format: 32 bits, little-endian, red at bit 0,
// so a pixel's bytes are red, green, blue and one unused.

const ENC_RAW = 0;
const ENC_COPYRECT = 1;
const ENC_RRE = 2;
const ENC_HEXTILE = 5;
const ENC_ZLIB = 6;
const ENC_CURSOR = -239;
const ENC_DESKTOP_SIZE = -223;
const ENC_LAST_RECT = -224;
const ENC_EXTENDED_DESKTOP_SIZE = -308;
/** Pseudo-encodings the relay lets through whose rectangles carry no payload. */
const EMPTY_PSEUDO = new Set<number>([
  -258, // QEMU extended key events
  -1063131698, // extended clipboard
  ...Array.from({ length: 10 }, (_, i) => -256 + i), // compression level
  ...Array.from({ length: 10 }, (_, i) => -32 + i), // JPEG quality level
]);
const BPP = 4;
const STORED_BLOCK = 65535;

/** The remote pointer's shape (Cursor pseudo-encoding), in RGBA with its hotspot. */
export interface CursorShape {
  hotX: number;
  hotY: number;
  width: number;
  height: number;
  rgba: Uint8ClampedArray<ArrayBuffer>;
}

interface Rect {
  x: number;
  y: number;
  w: number;
  h: number;
  encoding: number;
}

/**
 * A framebuffer fed with a VNC server's output (after its ServerInit), as it was recorded:
 * message boundaries need not match the pieces it is fed in.
 */
export class RfbFramebuffer {
  width: number;
  height: number;
  /** Pixels as the server sent them: red, green, blue, unused (not alpha). */
  pixels: Uint8Array;
  /** The last pointer shape the server sent (null: the server draws its own). */
  cursor: CursorShape | null = null;
  /** Set when `cursor` changed; the reader clears it. */
  cursorChanged = false;
  private resized = false;
  private left = Infinity;
  private top = Infinity;
  private right = 0;
  private bottom = 0;
  private buffer = new Uint8Array(64 * 1024);
  private start = 0;
  private end = 0;
  private rects = -1; // rectangles left in the current update; -1: between messages
  private rect: Rect | null = null;
  private tile = 0;
  private background = new Uint8Array(BPP);
  private foreground = new Uint8Array(BPP);

  /** `serverInit`: a sync record's body (the ServerInit with the current size). */
  constructor(serverInit: Uint8Array) {
    const view = new DataView(serverInit.buffer, serverInit.byteOffset, serverInit.byteLength);
    this.width = view.getUint16(0);
    this.height = view.getUint16(2);
    this.pixels = new Uint8Array(this.width * this.height * BPP);
  }

  /** Recorded server bytes; throws on a message or encoding the relay never lets through. */
  feed(data: Uint8Array): void {
    this.append(data);
    this.parse();
    if (this.start === this.end) this.start = this.end = 0;
  }

  /** The next update is the whole picture, its size first (for a noVNC showing another one). */
  redraw(): void {
    this.resized = true;
  }

  /** True when something changed since the last `takeUpdate`. */
  get changed(): boolean {
    return this.resized || this.right > this.left;
  }

  /**
   * What changed since the last call, as one FramebufferUpdate for noVNC (a DesktopSize
   * rectangle after a resize, then the changed area in the Zlib encoding: noVNC draws a
   * Zlib rectangle with one putImageData). `first` starts the zlib stream: true for the
   * first update a given noVNC instance is shown. Null when nothing changed.
   */
  takeUpdate(first: boolean): Uint8Array | null {
    if (!this.changed) return null;
    if (this.resized) this.damage(0, 0, this.width, this.height);
    const x = this.left;
    const y = this.top;
    const w = Math.min(this.right, this.width) - x;
    const h = Math.min(this.bottom, this.height) - y;
    const rows = w > 0 && h > 0 ? h : 0;
    const size = rows * w * BPP;
    const blocks = Math.ceil(size / STORED_BLOCK);
    const zlibLength = (first ? 2 : 0) + blocks * 5 + size;
    const rectangles = (this.resized ? 1 : 0) + (rows ? 1 : 0);
    const out = new Uint8Array(4 + 12 * rectangles + (rows ? 4 + zlibLength : 0));
    const view = new DataView(out.buffer);
    view.setUint16(2, rectangles);
    let at = 4;
    const header = (rx: number, ry: number, rw: number, rh: number, encoding: number) => {
      view.setUint16(at, rx);
      view.setUint16(at + 2, ry);
      view.setUint16(at + 4, rw);
      view.setUint16(at + 6, rh);
      view.setInt32(at + 8, encoding);
      at += 12;
    };
    if (this.resized) header(0, 0, this.width, this.height, ENC_DESKTOP_SIZE);
    if (rows) {
      header(x, y, w, h, ENC_ZLIB);
      view.setUint32(at, zlibLength);
      at += 4;
      if (first) {
        out[at++] = 0x78; // deflate, 32 KiB window
        out[at++] = 0x01; // no preset dictionary, fastest
      }
      // stored (uncompressed) deflate blocks, never the final one: the stream goes on
      const line = w * BPP;
      let row = 0;
      let column = 0; // bytes of `row` already copied
      for (let left = size; left > 0; ) {
        const length = Math.min(STORED_BLOCK, left);
        out[at] = 0;
        view.setUint16(at + 1, length, true);
        view.setUint16(at + 3, ~length & 0xffff, true);
        at += 5;
        for (let want = length; want > 0; ) {
          const from = ((y + row) * this.width + x) * BPP + column;
          const take = Math.min(want, line - column);
          out.set(this.pixels.subarray(from, from + take), at);
          at += take;
          want -= take;
          column += take;
          if (column === line) {
            column = 0;
            row++;
          }
        }
        left -= length;
      }
    }
    this.resized = false;
    this.left = this.top = Infinity;
    this.right = this.bottom = 0;
    return out;
  }

  private damage(x: number, y: number, w: number, h: number): void {
    if (w <= 0 || h <= 0) return;
    this.left = Math.min(this.left, x);
    this.top = Math.min(this.top, y);
    this.right = Math.max(this.right, x + w);
    this.bottom = Math.max(this.bottom, y + h);
  }

  private append(data: Uint8Array): void {
    if (this.end + data.length > this.buffer.length) {
      const kept = this.end - this.start;
      const needed = kept + data.length;
      if (needed > this.buffer.length) {
        const grown = new Uint8Array(Math.max(needed, this.buffer.length * 2));
        grown.set(this.buffer.subarray(this.start, this.end));
        this.buffer = grown;
      } else {
        this.buffer.copyWithin(0, this.start, this.end);
      }
      this.start = 0;
      this.end = kept;
    }
    this.buffer.set(data, this.end);
    this.end += data.length;
  }

  private available(): number {
    return this.end - this.start;
  }

  private u16(at: number): number {
    return (this.buffer[this.start + at] << 8) | this.buffer[this.start + at + 1];
  }

  private u32(at: number): number {
    return this.u16(at) * 65536 + this.u16(at + 2);
  }

  private parse(): void {
    for (;;) {
      if (this.rects === 0) this.rects = -1;
      if (this.rects < 0) {
        if (!this.message()) return;
        continue;
      }
      if (!this.rect) {
        if (this.available() < 12) return;
        const encoding = this.u32(8) | 0;
        this.rect = { x: this.u16(0), y: this.u16(2), w: this.u16(4), h: this.u16(6), encoding };
        this.start += 12;
        this.tile = 0;
      }
      if (!this.decodeRect(this.rect)) return;
      this.rects = this.rect.encoding === ENC_LAST_RECT ? 0 : this.rects - 1;
      this.rect = null;
    }
  }

  /** One message other than a FramebufferUpdate's rectangles; false: wait for more bytes. */
  private message(): boolean {
    const have = this.available();
    if (have < 1) return false;
    const kind = this.buffer[this.start];
    let length: number;
    switch (kind) {
      case 0: // FramebufferUpdate: its rectangles follow
        if (have < 4) return false;
        this.rects = this.u16(2);
        this.start += 4;
        return true;
      case 1: // SetColourMapEntries
        if (have < 6) return false;
        length = 6 + 6 * this.u16(4);
        break;
      case 2: // Bell
      case 150: // EndOfContinuousUpdates
        length = 1;
        break;
      case 3: // ServerCutText (negative length: extended clipboard)
        if (have < 8) return false;
        length = 8 + Math.abs(this.u32(4) | 0);
        break;
      case 248: // ServerFence
        if (have < 9) return false;
        length = 9 + this.buffer[this.start + 8];
        break;
      case 250: // xvp
        length = 4;
        break;
      default:
        throw new Error(`The recording holds a server message this player cannot read (type ${kind}).`);
    }
    if (have < length) return false;
    this.start += length;
    return true;
  }

  /** Decode `rect` once its bytes are in; false: wait for more. */
  private decodeRect(rect: Rect): boolean {
    const { x, y, w, h } = rect;
    const have = this.available();
    switch (rect.encoding) {
      case ENC_RAW: {
        const size = w * h * BPP;
        if (have < size) return false;
        const line = w * BPP;
        for (let row = 0; row < h && y + row < this.height; row++) {
          const from = this.start + row * line;
          const width = Math.min(w, this.width - x) * BPP;
          if (width > 0) this.pixels.set(this.buffer.subarray(from, from + width), ((y + row) * this.width + x) * BPP);
        }
        this.start += size;
        this.damage(x, y, w, h);
        return true;
      }
      case ENC_COPYRECT: {
        if (have < 4) return false;
        this.copy(this.u16(0), this.u16(2), x, y, w, h);
        this.start += 4;
        return true;
      }
      case ENC_RRE: {
        if (have < 4 + BPP) return false;
        const count = this.u32(0);
        const size = 4 + BPP + count * (BPP + 8);
        if (have < size) return false;
        this.fill(x, y, w, h, this.start + 4);
        for (let i = 0, at = 4 + BPP; i < count; i++, at += BPP + 8) {
          this.fill(x + this.u16(at + BPP), y + this.u16(at + BPP + 2), this.u16(at + BPP + 4), this.u16(at + BPP + 6), this.start + at);
        }
        this.start += size;
        this.damage(x, y, w, h);
        return true;
      }
      case ENC_HEXTILE:
        return this.hextile(rect);
      case ENC_CURSOR: {
        const maskLine = Math.ceil(w / 8);
        const size = w * h * BPP + maskLine * h;
        if (have < size) return false;
        const rgba = new Uint8ClampedArray(w * h * 4);
        const mask = this.start + w * h * BPP;
        for (let py = 0; py < h; py++) {
          for (let px = 0; px < w; px++) {
            const i = (py * w + px) * 4;
            const shown = (this.buffer[mask + py * maskLine + (px >> 3)] << (px & 7)) & 0x80;
            rgba[i] = this.buffer[this.start + i];
            rgba[i + 1] = this.buffer[this.start + i + 1];
            rgba[i + 2] = this.buffer[this.start + i + 2];
            rgba[i + 3] = shown ? 255 : 0;
          }
        }
        this.cursor = w && h ? { hotX: x, hotY: y, width: w, height: h, rgba } : null;
        this.cursorChanged = true;
        this.start += size;
        return true;
      }
      case ENC_DESKTOP_SIZE:
        this.resize(w, h);
        return true;
      case ENC_EXTENDED_DESKTOP_SIZE: {
        if (have < 4) return false;
        const size = 4 + 16 * this.buffer[this.start];
        if (have < size) return false;
        if (y === 0) this.resize(w, h); // y: the status; 0 is a size that took effect
        this.start += size;
        return true;
      }
      case ENC_LAST_RECT:
        return true;
      default:
        if (EMPTY_PSEUDO.has(rect.encoding)) return true;
        throw new Error(`The recording holds an encoding this player cannot read (${rect.encoding}).`);
    }
  }

  private hextile(rect: Rect): boolean {
    const cols = Math.ceil(rect.w / 16);
    const total = cols * Math.ceil(rect.h / 16);
    const buffer = this.buffer;
    while (this.tile < total) {
      const have = this.available();
      if (have < 1) return false;
      const tx = rect.x + (this.tile % cols) * 16;
      const ty = rect.y + Math.floor(this.tile / cols) * 16;
      const tw = Math.min(16, rect.x + rect.w - tx);
      const th = Math.min(16, rect.y + rect.h - ty);
      const flags = buffer[this.start];
      let size = 1;
      if (flags & 1) {
        size += tw * th * BPP;
        if (have < size) return false;
        this.start += 1;
        this.decodeRect({ x: tx, y: ty, w: tw, h: th, encoding: ENC_RAW });
      } else {
        if (flags & 2) size += BPP;
        if (flags & 4) size += BPP;
        let subrects = 0;
        if (flags & 8) {
          if (have < size + 1) return false;
          subrects = buffer[this.start + size];
          size += 1 + subrects * (flags & 16 ? BPP + 2 : 2);
        }
        if (have < size) return false;
        let at = this.start + 1;
        if (flags & 2) {
          this.background.set(buffer.subarray(at, at + BPP));
          at += BPP;
        }
        if (flags & 4) {
          this.foreground.set(buffer.subarray(at, at + BPP));
          at += BPP;
        }
        this.fillColour(tx, ty, tw, th, this.background, 0);
        if (flags & 8) at += 1;
        for (let i = 0; i < subrects; i++) {
          let colour = this.foreground;
          let colourAt = 0;
          if (flags & 16) {
            colour = buffer;
            colourAt = at;
            at += BPP;
          }
          const xy = buffer[at];
          const wh = buffer[at + 1];
          at += 2;
          this.fillColour(tx + (xy >> 4), ty + (xy & 15), (wh >> 4) + 1, (wh & 15) + 1, colour, colourAt);
        }
        this.start += size;
        this.damage(tx, ty, tw, th);
      }
      this.tile++;
    }
    return true;
  }

  /** Fill with the colour at `buffer[at]` (an offset into the parse buffer). */
  private fill(x: number, y: number, w: number, h: number, at: number): void {
    this.fillColour(x, y, w, h, this.buffer, at);
  }

  private fillColour(x: number, y: number, w: number, h: number, colour: Uint8Array, at: number): void {
    const right = Math.min(x + w, this.width);
    const bottom = Math.min(y + h, this.height);
    if (right <= x || bottom <= y) return;
    const pixels = this.pixels;
    const r = colour[at];
    const g = colour[at + 1];
    const b = colour[at + 2];
    const u = colour[at + 3];
    // the first row pixel by pixel, the others copied from it
    const first = (y * this.width + x) * BPP;
    const line = (right - x) * BPP;
    for (let i = first; i < first + line; i += BPP) {
      pixels[i] = r;
      pixels[i + 1] = g;
      pixels[i + 2] = b;
      pixels[i + 3] = u;
    }
    for (let row = y + 1; row < bottom; row++) pixels.copyWithin((row * this.width + x) * BPP, first, first + line);
  }

  private copy(sx: number, sy: number, x: number, y: number, w: number, h: number): void {
    w = Math.min(w, this.width - x, this.width - sx);
    h = Math.min(h, this.height - y, this.height - sy);
    if (w <= 0 || h <= 0) return;
    const line = w * BPP;
    // rows in the order that never reads a row already overwritten
    for (let i = 0; i < h; i++) {
      const row = sy < y ? h - 1 - i : i;
      const from = ((sy + row) * this.width + sx) * BPP;
      this.pixels.copyWithin(((y + row) * this.width + x) * BPP, from, from + line);
    }
    this.damage(x, y, w, h);
  }

  private resize(width: number, height: number): void {
    if (width === this.width && height === this.height) return;
    const pixels = new Uint8Array(width * height * BPP);
    const line = Math.min(width, this.width) * BPP;
    for (let row = 0; row < Math.min(height, this.height); row++) {
      pixels.set(this.pixels.subarray(row * this.width * BPP, row * this.width * BPP + line), row * width * BPP);
    }
    this.pixels = pixels;
    this.width = width;
    this.height = height;
    this.resized = true;
  }
}

/** Where the browser put the pointer last in a client-channel record (its PointerEvents), or null. */
export function lastPointer(data: Uint8Array): { x: number; y: number } | null {
  let found: { x: number; y: number } | null = null;
  for (let at = 0; at < data.length; ) {
    const kind = data[at];
    if (kind === 5 && at + 6 <= data.length) {
      found = { x: (data[at + 2] << 8) | data[at + 3], y: (data[at + 4] << 8) | data[at + 5] };
      at += 6;
    } else if (kind === 4) {
      at += 8; // a key, recorded without its keysym
    } else {
      break;
    }
  }
  return found;
}
