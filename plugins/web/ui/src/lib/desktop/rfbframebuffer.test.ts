import { describe, expect, it } from "vitest";
// noVNC's own inflater: what decodes the Zlib rectangles the player hands it
import Inflator from "novnc-core/inflator.js";
import { RfbFramebuffer, lastPointer } from "./rfbframebuffer";
import { WINDOW, readSpan } from "./rfbrecording";

const RED = [255, 0, 0, 0];
const GREEN = [0, 255, 0, 0];
const BLUE = [0, 0, 255, 0];
const WHITE = [255, 255, 255, 0];

function serverInit(width: number, height: number): Uint8Array {
  const init = new Uint8Array(24);
  new DataView(init.buffer).setUint16(0, width);
  new DataView(init.buffer).setUint16(2, height);
  return init;
}

function u16(value: number): number[] {
  return [value >> 8, value & 255];
}

function u32(value: number): number[] {
  return [...u16((value >>> 16) & 0xffff), ...u16(value & 0xffff)];
}

function rect(x: number, y: number, w: number, h: number, encoding: number): number[] {
  return [...u16(x), ...u16(y), ...u16(w), ...u16(h), ...u32(encoding >>> 0)];
}

function update(...rects: number[][]): number[] {
  return [0, 0, ...u16(rects.length), ...rects.flat()];
}

function solid(count: number, colour: number[]): number[] {
  return Array.from({ length: count }, () => colour).flat();
}

function pixel(fb: RfbFramebuffer, x: number, y: number): number[] {
  const at = (y * fb.width + x) * 4;
  return [...fb.pixels.subarray(at, at + 4)];
}

describe("the player's framebuffer", () => {
  it("decodes Raw, CopyRect and RRE rectangles", () => {
    const fb = new RfbFramebuffer(serverInit(8, 4));
    fb.feed(
      new Uint8Array(
        update(
          [...rect(0, 0, 2, 2, 0), ...RED, ...GREEN, ...BLUE, ...WHITE],
          [...rect(4, 0, 4, 4, 2), ...u32(1), ...BLUE, ...GREEN, ...u16(1), ...u16(2), ...u16(2), ...u16(1)],
          [...rect(2, 2, 2, 2, 1), ...u16(0), ...u16(0)],
        ),
      ),
    );
    expect(pixel(fb, 0, 0)).toEqual(RED);
    expect(pixel(fb, 1, 1)).toEqual(WHITE);
    expect(pixel(fb, 4, 0)).toEqual(BLUE);
    expect(pixel(fb, 5, 2)).toEqual(GREEN);
    expect(pixel(fb, 6, 2)).toEqual(GREEN);
    expect(pixel(fb, 7, 2)).toEqual(BLUE);
    expect(pixel(fb, 2, 2)).toEqual(RED); // copied from (0, 0)
    expect(pixel(fb, 3, 3)).toEqual(WHITE);
  });

  it("decodes Hextile tiles (raw, background, coloured and plain subrectangles)", () => {
    const fb = new RfbFramebuffer(serverInit(40, 16));
    const tiles = [
      // tile 0 (16x16): background red, foreground blue, one 2x3 subrect at (1, 2)
      2 | 4 | 8, ...RED, ...BLUE, 1, (1 << 4) | 2, (1 << 4) | 2,
      // tile 1: no flags: the same background, one coloured (green) subrect at (15, 15)
      8 | 16, 1, ...GREEN, (15 << 4) | 15, 0,
      // tile 2 (8x16, the right edge): raw white
      1, ...solid(8 * 16, WHITE),
    ];
    fb.feed(new Uint8Array(update([...rect(0, 0, 40, 16, 5), ...tiles])));
    expect(pixel(fb, 0, 0)).toEqual(RED);
    expect(pixel(fb, 1, 2)).toEqual(BLUE);
    expect(pixel(fb, 2, 4)).toEqual(BLUE);
    expect(pixel(fb, 3, 2)).toEqual(RED);
    expect(pixel(fb, 16, 0)).toEqual(RED);
    expect(pixel(fb, 31, 15)).toEqual(GREEN);
    expect(pixel(fb, 32, 0)).toEqual(WHITE);
    expect(pixel(fb, 39, 15)).toEqual(WHITE);
  });

  it("reads messages cut anywhere, skipping the ones without pixels", () => {
    const stream = new Uint8Array([
      2, // Bell
      ...[3, 0, 0, 0, ...u32(3), 97, 98, 99], // ServerCutText
      ...update([...rect(0, 0, 1, 1, -223 >>> 0)].flat(), [...rect(1, 0, 1, 1, 0), ...GREEN]),
      ...[248, 0, 0, 0, ...u32(0), 2, 7, 7], // ServerFence
      ...update([...rect(0, 0, 1, 1, 0), ...BLUE], rect(0, 0, 0, 0, -224)),
    ]);
    const whole = new RfbFramebuffer(serverInit(2, 1));
    whole.feed(stream);
    for (let cut = 1; cut < stream.length; cut++) {
      const fb = new RfbFramebuffer(serverInit(2, 1));
      fb.feed(stream.subarray(0, cut));
      fb.feed(stream.subarray(cut));
      expect([...fb.pixels]).toEqual([...whole.pixels]);
    }
    expect(whole.width).toBe(1); // DesktopSize to 1x1, then the raw pixel past it dropped
    expect(pixel(whole, 0, 0)).toEqual(BLUE);
  });

  it("keeps the pointer's shape without drawing it", () => {
    const fb = new RfbFramebuffer(serverInit(4, 4));
    // a 2x2 cursor, hotspot (1, 0): left column shown, right one masked out
    fb.feed(new Uint8Array(update([...rect(1, 0, 2, 2, -239 >>> 0), ...RED, ...GREEN, ...BLUE, ...WHITE, 0x80, 0x80])));
    expect(fb.cursor).toMatchObject({ hotX: 1, hotY: 0, width: 2, height: 2 });
    expect([...fb.cursor!.rgba]).toEqual([255, 0, 0, 255, 0, 255, 0, 0, 0, 0, 255, 255, 255, 255, 255, 0]);
    expect(fb.cursorChanged).toBe(true);
    expect(fb.changed).toBe(false);
  });

  it("refuses what the recording relay never lets through", () => {
    const fb = new RfbFramebuffer(serverInit(4, 4));
    expect(() => fb.feed(new Uint8Array(update([...rect(0, 0, 4, 4, 16), 0, 0, 0, 0])))).toThrow(/encoding/);
    expect(() => new RfbFramebuffer(serverInit(4, 4)).feed(new Uint8Array([77]))).toThrow(/server message/);
  });

  it("hands on what changed as one Zlib rectangle noVNC's inflater reads", () => {
    // wide enough that a row does not fit a stored block: blocks cut inside rows
    const width = 20000;
    const fb = new RfbFramebuffer(serverInit(width, 3));
    fb.feed(new Uint8Array(update([...rect(0, 0, width, 3, 2), ...u32(1), ...RED, ...GREEN, ...u16(5), ...u16(1), ...u16(1), ...u16(1)])));
    const inflator = new Inflator();
    const first = fb.takeUpdate(true)!;
    expect(fb.takeUpdate(false)).toBeNull();
    const pixels = zlibRect(first, inflator, 0, 0, width, 3);
    expect([...pixels.subarray(0, 4)]).toEqual(RED);
    expect([...pixels.subarray((width + 5) * 4, (width + 6) * 4)]).toEqual(GREEN);
    // the next update goes on in the same zlib stream: only the damaged area
    fb.feed(new Uint8Array(update([...rect(7, 2, 2, 1, 0), ...BLUE, ...WHITE])));
    const next = zlibRect(fb.takeUpdate(false)!, inflator, 7, 2, 2, 1);
    expect([...next]).toEqual([...BLUE, ...WHITE]);
  });

  it("says a resize before the picture", () => {
    const fb = new RfbFramebuffer(serverInit(2, 2));
    fb.feed(new Uint8Array(update(rect(0, 0, 3, 1, -308 >>> 0).concat([1, 0, 0, 0], solid(16, [0])))));
    const out = fb.takeUpdate(true)!;
    const view = new DataView(out.buffer);
    expect(view.getUint16(2)).toBe(2);
    expect([view.getUint16(8), view.getUint16(10), view.getInt32(12)]).toEqual([3, 1, -223]);
    expect(view.getInt32(24)).toBe(6);
  });
});

describe("the player's helpers", () => {
  it("finds the pointer's last place in recorded input", () => {
    const keys = [4, 1, 0, 0, 0, 0, 0, 0];
    expect(lastPointer(new Uint8Array([5, 0, ...u16(10), ...u16(20), ...keys, 5, 1, ...u16(300), ...u16(2)]))).toEqual({ x: 300, y: 2 });
    expect(lastPointer(new Uint8Array(keys))).toBeNull();
    expect(lastPointer(new Uint8Array([5, 0, 1]))).toBeNull(); // cut short
  });

  it("reads a seek's span up to the next key frame in one request, within bounds", () => {
    const frames = [
      { elapsed: 0, offset: 100 },
      { elapsed: 10_000, offset: 100 + 2 * WINDOW },
      { elapsed: 20_000, offset: 100 + 2 * WINDOW + 100 },
      { elapsed: 30_000, offset: 100 + 2 * WINDOW + 100 + 64 * WINDOW },
    ];
    expect(readSpan(frames, frames[0])).toBe(2 * WINDOW);
    expect(readSpan(frames, frames[1])).toBe(WINDOW); // never less than a window
    expect(readSpan(frames, frames[2])).toBe(8 * 1024 * 1024); // nor more than 8 MiB
    expect(readSpan(frames, frames[3])).toBe(WINDOW); // the last one: read on by windows
    expect(readSpan(frames, null)).toBe(WINDOW);
  });
});

/** The pixels of the one Zlib rectangle in `update` (a FramebufferUpdate), checked against its header. */
function zlibRect(update: Uint8Array, inflator: Inflator, x: number, y: number, w: number, h: number): Uint8Array {
  const view = new DataView(update.buffer, update.byteOffset, update.byteLength);
  expect(update[0]).toBe(0);
  expect(view.getUint16(2)).toBe(1);
  expect([view.getUint16(4), view.getUint16(6), view.getUint16(8), view.getUint16(10), view.getInt32(12)]).toEqual([x, y, w, h, 6]);
  const length = view.getUint32(16);
  expect(update.length).toBe(20 + length);
  inflator.setInput(update.subarray(20));
  const pixels = inflator.inflate(w * h * 4).slice();
  inflator.setInput(null);
  return pixels;
}
