// What the socket brings, handed to xterm.js's parser (xterm.js's "flow control" guide:
// a write's callback says the parser is done with it).
//
// xterm.js parses each write() in one go and then draws the screen in the next animation
// frame. During a flood (`cat` of a big file) the socket's frames (up to 256 KiB) came one
// per task, so every frame was parsed alone and followed by a drawing of all the rows: the
// DOM rows rebuilt, styled, laid out, painted and rasterised on the CPU, several times per
// MiB. Here, once a big write went in, the next one waits until `interval` ms after it
// started (unless a whole batch is waiting), and what arrives meanwhile goes in as one
// piece: about 1000/`interval` drawings a second during a flood, and the screen at most
// `interval` ms behind (docs/performance.md). Small writes after small ones (a keystroke's
// echo, a prompt) go in at once.

/** The most bytes joined into one write (a bigger socket frame is written whole). */
export const MAX_BATCH = 4 << 20;
/** A write at least this big starts a flood: the next write waits for `interval`. */
export const FLOOD_BYTES = 16 * 1024;
/** During a flood, one write (and so one drawing of the screen) per this many ms. */
export const FLOOD_INTERVAL_MS = 100;

export interface FeedOptions {
  maxBatch?: number;
  /** 0: no waiting, a write as soon as the last one is parsed. */
  interval?: number;
  floodBytes?: number;
  now?: () => number;
  later?: (run: () => void, ms: number) => ReturnType<typeof setTimeout>;
}

type Piece = Uint8Array | string;
/** An action queued between pieces of output. */
class Action {
  constructor(readonly run: () => void) {}
}

/** Hands data to `write` one piece at a time, joined into batches while xterm.js is busy. */
export class OutputFeed {
  private readonly waiting: (Piece | Action)[] = [];
  private waitingSize = 0;
  private busy = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private lastAt = 0;
  private lastSize = 0;
  private readonly maxBatch: number;
  private readonly interval: number;
  private readonly floodBytes: number;
  private readonly now: () => number;
  private readonly later: (run: () => void, ms: number) => ReturnType<typeof setTimeout>;

  constructor(
    private readonly write: (data: Piece, done: () => void) => void,
    options: FeedOptions = {},
  ) {
    this.maxBatch = options.maxBatch ?? MAX_BATCH;
    this.interval = options.interval ?? FLOOD_INTERVAL_MS;
    this.floodBytes = options.floodBytes ?? FLOOD_BYTES;
    this.now = options.now ?? (() => performance.now());
    this.later = options.later ?? ((run, ms) => setTimeout(run, ms));
  }

  /** Data from the socket, in order. */
  push(data: Piece): void {
    this.waiting.push(data);
    this.waitingSize += data.length;
    this.pump();
  }

  /** Run `action` after all output pushed so far is parsed, before any output pushed after. */
  schedule(action: () => void): void {
    this.waiting.push(new Action(action));
    this.pump();
  }

  /** How many pieces wait (for tests). */
  get backlog(): number {
    return this.waiting.length;
  }

  /** Stop: what waits is dropped, nothing more is written. */
  clear(): void {
    this.waiting.length = 0;
    this.waitingSize = 0;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private pump(): void {
    if (this.busy) return;
    // an action waits for nothing but the output before it (not for the flood's interval)
    while (this.waiting[0] instanceof Action) (this.waiting.shift() as Action).run();
    if (this.waiting.length === 0) return;
    // a whole batch waiting goes in at once: output faster than a batch per interval
    // is parsed as fast as it comes, and what waits never grows beyond about a batch
    const full = this.waitingSize >= this.maxBatch;
    const flood = this.lastSize >= this.floodBytes && !full;
    const wait = flood ? this.lastAt + this.interval - this.now() : 0;
    if (wait > 0) {
      this.timer ??= this.later(() => {
        this.timer = null;
        this.pump();
      }, wait);
      return;
    }
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.take();
    this.waitingSize -= batch.length;
    this.busy = true;
    this.lastAt = this.now();
    this.lastSize = batch.length;
    this.write(batch, this.done);
  }

  private readonly done = (): void => {
    this.busy = false;
    this.pump();
  };

  /** The next write: text frames alone, byte frames joined up to `maxBatch` bytes. */
  private take(): Piece {
    const first = this.waiting.shift() as Piece;
    if (typeof first === "string") return first;
    let size = first.length;
    let count = 0;
    for (const piece of this.waiting) {
      if (!(piece instanceof Uint8Array) || size + piece.length > this.maxBatch) break;
      size += piece.length;
      count++;
    }
    if (count === 0) return first;
    const batch = new Uint8Array(size);
    batch.set(first, 0);
    let offset = first.length;
    for (const piece of this.waiting.splice(0, count) as Uint8Array[]) {
      batch.set(piece, offset);
      offset += piece.length;
    }
    return batch;
  }
}
