import { describe, expect, it } from "vitest";
import { CHANNEL_SERVER, CHANNEL_SYNC, RecordReader, RecordingChannel, keyFrameBefore, parseHeader, splitRecords } from "./rfbrecording";

function record(elapsed: number, channel: number, data: number[]): number[] {
  const head = new Uint8Array(9);
  const view = new DataView(head.buffer);
  view.setUint32(0, elapsed);
  head[4] = channel;
  view.setUint32(5, data.length);
  return [...head, ...data];
}

function header(meta: object): number[] {
  const json = new TextEncoder().encode(JSON.stringify(meta));
  return [...new TextEncoder().encode("HGSTREAM"), 0, 1, json.length >> 8, json.length & 255, ...json];
}

describe("the stream recording framing", () => {
  const bytes = new Uint8Array([...header({ protocol: "vnc" }), ...record(0, CHANNEL_SYNC, [1, 2]), ...record(40, CHANNEL_SERVER, [9, 9, 9])]);

  it("reads the header and whole records, leaving a partial one", () => {
    const parsed = parseHeader(bytes);
    expect(parsed?.meta).toEqual({ protocol: "vnc" });
    const { records, used } = splitRecords(bytes.subarray(parsed!.start, bytes.length - 1), parsed!.start);
    expect(records.map((r) => [r.elapsedMs, r.channel, [...r.data], r.offset])).toEqual([[0, CHANNEL_SYNC, [1, 2], parsed!.start]]);
    expect(used).toBe(11);
  });

  it("refuses what is not a recording", () => {
    expect(() => parseHeader(new TextEncoder().encode("RIFF0000WEBMxxxx"))).toThrow(/not a hostgate/);
  });

  it("reads by ranges across window edges", async () => {
    const start = parseHeader(bytes)!.start;
    const asked: [number, number][] = [];
    const reader = new RecordReader(async (from, to) => {
      asked.push([from, to]);
      return bytes.slice(from, to + 1);
    }, start, 4);
    const seen = [];
    for (let r = await reader.next(); r; r = await reader.next()) seen.push([r.channel, [...r.data], r.offset]);
    expect(seen).toEqual([
      [CHANNEL_SYNC, [1, 2], start],
      [CHANNEL_SERVER, [9, 9, 9], start + 11],
    ]);
    expect(asked.every(([from, to]) => to - from === 3)).toBe(true); // never more than a window
  });

  it("starts from bytes already read, then reads on from where they end", async () => {
    const start = parseHeader(bytes)!.start;
    const asked: [number, number][] = [];
    const fetchRange = async (from: number, to: number) => {
      asked.push([from, to]);
      return bytes.slice(from, to + 1);
    };
    // the first bytes read already, cut inside the second record
    const head = { data: bytes.slice(0, start + 13), base: 0, complete: false };
    const reader = new RecordReader(fetchRange, start, 64, head);
    expect((await reader.next())?.data).toEqual(new Uint8Array([1, 2]));
    expect(asked).toEqual([]); // the first record came from them
    const second = await reader.next();
    expect([...second!.data]).toEqual([9, 9, 9]);
    expect(asked).toEqual([[start + 13, start + 13 + 63]]);
    expect(await reader.next()).toBeNull();
    // the whole file read already: no request at all; bytes that miss the start: ignored
    asked.length = 0;
    const whole = new RecordReader(fetchRange, start, 64, { data: bytes, base: 0, complete: true });
    expect((await whole.next())?.channel).toBe(CHANNEL_SYNC);
    expect((await whole.next())?.channel).toBe(CHANNEL_SERVER);
    expect(await whole.next()).toBeNull();
    expect(asked).toEqual([]);
    const elsewhere = new RecordReader(fetchRange, start + 11, 64, { data: bytes.slice(0, 8), base: 0, complete: false });
    expect((await elsewhere.next())?.offset).toBe(start + 11);
    expect(asked).toEqual([[start + 11, start + 11 + 63]]);
  });

  it("picks the key frame before a moment", () => {
    const frames = [{ elapsed: 100, offset: 10 }, { elapsed: 10_000, offset: 500 }];
    expect(keyFrameBefore(frames, 50)).toBeNull();
    expect(keyFrameBefore(frames, 9_999)?.offset).toBe(10);
    expect(keyFrameBefore(frames, 20_000)?.offset).toBe(500);
  });
});

describe("the channel noVNC reads", () => {
  it("plays a server's handshake, then the recorded ServerInit", async () => {
    const init = new Uint8Array([0, 8, 0, 6]);
    const channel = new RecordingChannel(init);
    const got: number[][] = [];
    channel.onmessage = (event) => got.push([...new Uint8Array(event.data)]);
    await Promise.resolve();
    expect(new TextDecoder().decode(new Uint8Array(got[0]))).toBe("RFB 003.008\n");
    channel.send(new TextEncoder().encode("RFB 003.008\n"));
    await Promise.resolve();
    expect(got[1]).toEqual([1, 1]);
    channel.send(new Uint8Array([1]));
    await Promise.resolve();
    expect(got[2]).toEqual([0, 0, 0, 0]);
    channel.send(new Uint8Array([1])); // ClientInit
    await channel.started;
    expect(got[3]).toEqual([0, 8, 0, 6]);
    channel.push(new Uint8Array([0, 0, 0, 0]));
    expect(got).toHaveLength(5);
  });
});
