import { afterEach, describe, expect, it, vi } from "vitest";
import { OutputFeed } from "./feed";

/** A parser stand-in: records each write; `finish()` runs the oldest write's callback. */
function parser() {
  const writes: (Uint8Array | string)[] = [];
  const callbacks: (() => void)[] = [];
  return {
    writes,
    write: (data: Uint8Array | string, done: () => void) => {
      writes.push(data);
      callbacks.push(done);
    },
    finish: () => callbacks.shift()?.(),
    pending: () => callbacks.length,
  };
}

const bytes = (...values: number[]) => new Uint8Array(values);

describe("OutputFeed", () => {
  it("writes at once while the parser is idle (a keystroke's echo waits for nothing)", () => {
    const p = parser();
    const feed = new OutputFeed(p.write, { interval: 0 });
    feed.push(bytes(1));
    expect(p.writes).toEqual([bytes(1)]);
    p.finish();
    feed.push("x");
    expect(p.writes).toEqual([bytes(1), "x"]);
  });

  it("joins what arrives during a write into one write, in order, after the callback", () => {
    const p = parser();
    const feed = new OutputFeed(p.write, { interval: 0 });
    feed.push(bytes(1));
    feed.push(bytes(2, 3));
    feed.push(bytes(4));
    expect(p.writes).toHaveLength(1); // the parser is busy: nothing more yet
    expect(feed.backlog).toBe(2);
    p.finish();
    expect(p.writes).toEqual([bytes(1), bytes(2, 3, 4)]);
    expect(feed.backlog).toBe(0);
    p.finish();
    expect(p.pending()).toBe(0); // idle again: the next push writes at once
    feed.push(bytes(5));
    expect(p.writes.at(-1)).toEqual(bytes(5));
  });

  it("keeps text frames apart and in their place between byte frames", () => {
    const p = parser();
    const feed = new OutputFeed(p.write, { interval: 0 });
    feed.push(bytes(1));
    feed.push(bytes(2));
    feed.push("text");
    feed.push(bytes(3));
    feed.push(bytes(4));
    while (p.pending()) p.finish();
    expect(p.writes).toEqual([bytes(1), bytes(2), "text", bytes(3, 4)]);
  });

  it("joins at most maxBatch bytes per write; a bigger frame goes whole", () => {
    const p = parser();
    const feed = new OutputFeed(p.write, { maxBatch: 4, interval: 0 });
    feed.push(bytes(0));
    feed.push(bytes(1, 1));
    feed.push(bytes(2, 2));
    feed.push(bytes(3, 3, 3, 3, 3, 3));
    feed.push(bytes(4));
    while (p.pending()) p.finish();
    expect(p.writes).toEqual([bytes(0), bytes(1, 1, 2, 2), bytes(3, 3, 3, 3, 3, 3), bytes(4)]);
  });

  it("writes nothing more after clear()", () => {
    const p = parser();
    const feed = new OutputFeed(p.write, { interval: 0 });
    feed.push(bytes(1));
    feed.push(bytes(2));
    feed.clear();
    p.finish();
    expect(p.writes).toEqual([bytes(1)]);
  });

  it("runs a scheduled action after the output before it is parsed, before the output after it", () => {
    const p = parser();
    const seen: string[] = [];
    const feed = new OutputFeed((data, done) => {
      seen.push(`write ${String(data)}`);
      p.write(data, done);
    }, { interval: 0 });
    feed.push(bytes(1));
    feed.push(bytes(2));
    feed.schedule(() => seen.push("action"));
    feed.push(bytes(3));
    feed.push(bytes(4));
    expect(seen).toEqual(["write 1"]); // xterm.js still parses 1: the action waits
    p.finish();
    expect(seen).toEqual(["write 1", "write 2"]); // 2 is not joined with 3 across the action
    p.finish();
    expect(seen).toEqual(["write 1", "write 2", "action", "write 3,4"]);
    p.finish();
    feed.schedule(() => seen.push("idle action"));
    expect(seen.at(-1)).toBe("idle action"); // nothing before it: at once
  });

  describe("during a flood", () => {
    afterEach(() => vi.useRealTimers());

    it("writes once per interval after a big write, what came meanwhile joined", () => {
      vi.useFakeTimers();
      const p = parser();
      const feed = new OutputFeed(p.write, { interval: 50, floodBytes: 4, now: () => Date.now() });
      feed.push(new Uint8Array(8)); // big: a flood starts
      p.finish(); // parsed at once
      feed.push(bytes(1));
      feed.push(bytes(2));
      expect(p.writes).toHaveLength(1); // waits, though the parser is idle
      vi.advanceTimersByTime(49);
      feed.push(bytes(3));
      expect(p.writes).toHaveLength(1);
      vi.advanceTimersByTime(1);
      expect(p.writes.at(-1)).toEqual(bytes(1, 2, 3)); // one write, one drawing
      p.finish();
      // that write was small: the flood is over, the next goes in at once
      feed.push(bytes(4));
      expect(p.writes.at(-1)).toEqual(bytes(4));
    });

    it("does not hold small writes after small ones (a keystroke's echo)", () => {
      vi.useFakeTimers();
      const p = parser();
      const feed = new OutputFeed(p.write, { interval: 50, floodBytes: 4, now: () => Date.now() });
      for (const key of [1, 2, 3]) {
        feed.push(bytes(key));
        expect(p.writes.at(-1)).toEqual(bytes(key));
        p.finish();
        vi.advanceTimersByTime(5);
      }
    });

    it("writes a whole batch at once, without waiting for the interval", () => {
      vi.useFakeTimers();
      const p = parser();
      const feed = new OutputFeed(p.write, { interval: 50, floodBytes: 4, maxBatch: 8, now: () => Date.now() });
      feed.push(new Uint8Array(8));
      p.finish();
      feed.push(new Uint8Array(4));
      expect(p.writes).toHaveLength(1); // waits
      feed.push(new Uint8Array(4)); // a batch's worth waiting: no more waiting
      expect(p.writes).toHaveLength(2);
      expect(p.writes[1]).toHaveLength(8);
      p.finish();
      vi.advanceTimersByTime(100);
      expect(p.writes).toHaveLength(2); // the cancelled timer writes nothing
      expect(feed.backlog).toBe(0);
    });

    it("holds an action behind output that waits for the interval", () => {
      vi.useFakeTimers();
      const p = parser();
      const order: string[] = [];
      const feed = new OutputFeed((data, done) => {
        order.push(`write ${data.length}`);
        p.write(data, done);
      }, { interval: 50, floodBytes: 4, now: () => Date.now() });
      feed.push(new Uint8Array(8));
      p.finish();
      feed.push(bytes(1));
      feed.schedule(() => order.push("action"));
      feed.push(bytes(2, 3));
      expect(order).toEqual(["write 8"]); // the flood's wait holds the output, and so the action
      vi.advanceTimersByTime(50);
      expect(order).toEqual(["write 8", "write 1"]);
      p.finish();
      expect(order).toEqual(["write 8", "write 1", "action", "write 2"]);
    });

    it("clear() cancels the waiting write", () => {
      vi.useFakeTimers();
      const p = parser();
      const feed = new OutputFeed(p.write, { interval: 50, floodBytes: 4, now: () => Date.now() });
      feed.push(new Uint8Array(8));
      p.finish();
      feed.push(bytes(1));
      feed.clear();
      vi.advanceTimersByTime(100);
      expect(p.writes).toHaveLength(1);
    });
  });
});
