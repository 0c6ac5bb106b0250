// A gateway-recorded VNC session (docs/recordings.md, "Desktop recordings"): the record
// framing, a reader that fetches it by HTTP range as playback needs it, and a channel
// that hands the recorded server bytes to noVNC as if a VNC server sent them. Nothing
// is replayed to a live server; memory holds one window of the file at a time.

export const CHANNEL_SYNC = 0;
export const CHANNEL_SERVER = 1;
export const CHANNEL_CLIENT = 2;
const MAGIC = "HGSTREAM";
const RECORD_HEAD = 9;
/** Bytes fetched per range request. */
export const WINDOW = 512 * 1024;

export interface StreamRecord {
  elapsedMs: number;
  channel: number;
  data: Uint8Array;
  offset: number;
}

export interface KeyFrame {
  /** Milliseconds since the session started. */
  elapsed: number;
  offset: number;
}

/** The header's meta and the offset of the first record; null when `data` is too short to tell. */
export function parseHeader(data: Uint8Array): { meta: Record<string, unknown>; start: number } | null {
  if (data.length < 12) return null;
  if (new TextDecoder().decode(data.subarray(0, 8)) !== MAGIC) throw new Error("This is not a hostgate desktop recording.");
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const length = view.getUint16(10);
  if (data.length < 12 + length) return null;
  const meta = JSON.parse(new TextDecoder().decode(data.subarray(12, 12 + length))) as Record<string, unknown>;
  return { meta, start: 12 + length };
}

/** Whole records in `data` (which starts at file offset `base`), and how many bytes they took. */
export function splitRecords(data: Uint8Array, base: number): { records: StreamRecord[]; used: number } {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const records: StreamRecord[] = [];
  let position = 0;
  while (position + RECORD_HEAD <= data.length) {
    const length = view.getUint32(position + 5);
    const end = position + RECORD_HEAD + length;
    if (end > data.length) break;
    records.push({
      elapsedMs: view.getUint32(position),
      channel: data[position + 4],
      data: data.subarray(position + RECORD_HEAD, end),
      offset: base + position,
    });
    position = end;
  }
  return { records, used: position };
}

/** The last key frame at or before `ms` (null: start from the beginning). */
export function keyFrameBefore(frames: readonly KeyFrame[], ms: number): KeyFrame | null {
  let found: KeyFrame | null = null;
  for (const frame of frames) {
    if (frame.elapsed <= ms) found = frame;
    else break;
  }
  return found;
}

/** The most a seek reads in one range request (up to the next key frame). */
const MAX_SPAN = 8 * 1024 * 1024;

/** Bytes to read at once from `frame`: up to the next key frame, within [WINDOW, MAX_SPAN]. */
export function readSpan(frames: readonly KeyFrame[], frame: KeyFrame | null): number {
  const next = frame ? frames.find((candidate) => candidate.offset > frame.offset) : undefined;
  return next ? Math.min(MAX_SPAN, Math.max(WINDOW, next.offset - frame!.offset)) : WINDOW;
}

/** The RFB 3.8 handshake a player's noVNC is shown before the recorded ServerInit. */
export const HANDSHAKE = {
  version: new TextEncoder().encode("RFB 003.008\n"),
  security: new Uint8Array([1, 1]), // one type: None
  result: new Uint8Array([0, 0, 0, 0]),
};

type Fetcher = (start: number, end: number) => Promise<Uint8Array>;

/** The start of a recording already read (the player reads it while it asks for the key frames). */
export interface Prefetched {
  data: Uint8Array;
  /** The file offset of `data[0]`. */
  base: number;
  /** True when `data` runs to the end of the file. */
  complete: boolean;
}

/** Range reads of a recording, from an offset on, one window at a time. */
export class RecordReader {
  private pending: StreamRecord[] = [];
  private leftover = new Uint8Array(0);
  private position: number;
  private done = false;

  /**
   * `prefetched`: bytes of the file already read from `base` on (`complete`: to its end);
   * when they hold `start`, reading begins with them instead of a request.
   */
  constructor(
    private readonly fetchRange: Fetcher,
    start: number,
    private readonly window = WINDOW,
    prefetched?: Prefetched,
  ) {
    this.position = start;
    if (prefetched && start >= prefetched.base && start < prefetched.base + prefetched.data.length) {
      this.take(prefetched.data.subarray(start - prefetched.base));
      this.done = prefetched.complete;
    }
  }

  /** Bytes read at `position`: whole records become pending, the rest waits for more. */
  private take(chunk: Uint8Array): void {
    const data = new Uint8Array(this.leftover.length + chunk.length);
    data.set(this.leftover);
    data.set(chunk, this.leftover.length);
    const base = this.position - this.leftover.length;
    this.position += chunk.length;
    const { records, used } = splitRecords(data, base);
    // a record larger than the window: read on until it is whole
    this.leftover = data.slice(used);
    this.pending = records.map((record) => ({ ...record, data: record.data.slice() }));
  }

  /** The next record, or null at the end of the recording. */
  async next(): Promise<StreamRecord | null> {
    while (this.pending.length === 0) {
      if (this.done) return null;
      const chunk = await this.fetchRange(this.position, this.position + this.window - 1);
      if (chunk.length < this.window) this.done = true;
      this.take(chunk);
    }
    return this.pending.shift() ?? null;
  }
}

/** Range reads of `url` with fetch: what the gateway's `GET /sessions/:id/recording` answers. */
export function httpRanges(url: string): Fetcher {
  return async (start, end) => {
    const response = await fetch(url, { headers: { Range: `bytes=${start}-${end}` }, credentials: "same-origin" });
    if (response.status === 416) return new Uint8Array(0);
    if (!response.ok) throw new Error(`The recording could not be read (HTTP ${response.status}).`);
    const body = new Uint8Array(await response.arrayBuffer());
    // a server that ignored the range sent everything: keep the part asked for
    return response.status === 206 ? body : body.subarray(start, end + 1);
  };
}

/**
 * What noVNC sees instead of a WebSocket: it plays the RFB handshake of a server that
 * offers security None, then the recorded ServerInit, then whatever `push` hands it.
 * What noVNC sends (its ClientInit, encodings, update requests) goes nowhere.
 */
export class RecordingChannel {
  binaryType = "arraybuffer";
  protocol = "";
  readyState = "open";
  onopen: ((event: Event) => void) | null = null;
  onmessage: ((event: { data: ArrayBuffer }) => void) | null = null;
  onerror: ((event: Event) => void) | null = null;
  onclose: ((event: { code: number; reason: string; wasClean: boolean }) => void) | null = null;
  private received = 0;
  private step = 0;
  private ready: () => void = () => {};
  /** Resolves once noVNC has read the ServerInit: recorded updates may follow. */
  readonly started: Promise<void>;

  constructor(private readonly serverInit: Uint8Array) {
    this.started = new Promise((resolve) => (this.ready = resolve));
    queueMicrotask(() => this.deliver(HANDSHAKE.version));
  }

  send(data: ArrayBuffer | Uint8Array): void {
    this.received += data.byteLength;
    // version (12 bytes), the security type (1), ClientInit (1); later messages are ignored
    if (this.step === 0 && this.received >= 12) {
      this.step = 1;
      queueMicrotask(() => this.deliver(HANDSHAKE.security));
    } else if (this.step === 1 && this.received >= 13) {
      this.step = 2;
      queueMicrotask(() => this.deliver(HANDSHAKE.result));
    } else if (this.step === 2 && this.received >= 14) {
      this.step = 3;
      queueMicrotask(() => {
        this.deliver(this.serverInit);
        this.ready();
      });
    }
  }

  /** Recorded server bytes for noVNC. */
  push(data: Uint8Array): void {
    if (this.readyState === "open" && data.length) this.deliver(data);
  }

  close(): void {
    if (this.readyState === "closed") return;
    this.readyState = "closed";
    queueMicrotask(() => this.onclose?.({ code: 1000, reason: "", wasClean: true }));
  }

  private deliver(data: Uint8Array): void {
    if (this.readyState !== "open") return;
    const copy = new Uint8Array(data.length);
    copy.set(data);
    this.onmessage?.({ data: copy.buffer });
  }
}
