// Playback of a gateway-recorded VNC session in a canvas (no VNC server involved). The
// recorded server bytes are decoded into the player's framebuffer (rfbframebuffer.ts) and
// noVNC shows what changed, once per step: a seek reads from the nearest key frame before
// the target, decodes everything up to the target without drawing it, then draws once and
// plays on in time. The remote pointer is drawn over the picture where the
// recorded PointerEvents put it, in the shape the server last sent.
import RFB from "novnc-core/rfb.js";
import { initLogging } from "novnc-core/util/logging.js";
import { RfbFramebuffer, lastPointer } from "./rfbframebuffer";
import { CHANNEL_CLIENT, CHANNEL_SERVER, CHANNEL_SYNC, RecordReader, RecordingChannel, WINDOW, httpRanges, keyFrameBefore, parseHeader, readSpan, type KeyFrame, type Prefetched, type StreamRecord } from "./rfbrecording";

initLogging("none");

const TICK_MS = 40;

export interface PlaybackEvents {
  onTime(seconds: number): void;
  onState(playing: boolean, ended: boolean): void;
  onError(message: string): void;
}

export class DesktopPlayback {
  speed = 1;
  private rfb: RFB | null = null;
  private host: HTMLElement | null = null;
  private channel: RecordingChannel | null = null;
  private framebuffer: RfbFramebuffer | null = null;
  private drawn = false; // this noVNC has had an update (its zlib stream has started)
  private pointer: { x: number; y: number } | null = null;
  private cursor: HTMLCanvasElement | null = null;
  private resizing: ResizeObserver | null = null;
  private reader: RecordReader | null = null;
  private upcoming: StreamRecord | null = null;
  private position = 0; // seconds, when the clock was last set
  private wallAt = 0; // performance.now() then
  private playing = false;
  private generation = 0;
  private timer = 0;
  private firstRecord = 0;
  private lastMs = 0; // the last record handed on

  constructor(
    private readonly container: HTMLElement,
    private readonly url: string,
    private readonly frames: readonly KeyFrame[],
    private readonly events: PlaybackEvents,
  ) {
    if (typeof ResizeObserver !== "undefined") {
      this.resizing = new ResizeObserver(() => this.placeCursor());
      this.resizing.observe(container);
    }
  }

  /**
   * Show the first picture (paused at 0): the first key frame's, or the header is read first.
   * `head`: the file's first `WINDOW` bytes when already read (then no request for them).
   */
  async open(head?: Uint8Array): Promise<void> {
    if (!this.frames.length) {
      const parsed = parseHeader(head ?? (await httpRanges(this.url)(0, 4095)));
      if (!parsed) throw new Error("The recording is empty.");
      this.firstRecord = parsed.start;
    }
    await this.seek(0, head ? { data: head, base: 0, complete: head.length < WINDOW } : undefined);
  }

  /** Seconds into the recording now. */
  now(): number {
    return this.playing ? this.position + ((performance.now() - this.wallAt) / 1000) * this.speed : this.position;
  }

  /**
   * Go to `seconds`: from the key frame before it, decoded without drawing up to it, then
   * drawn once. The span up to the next key frame comes in one range read; the noVNC
   * instance stays (a new one only for the first picture).
   */
  async seek(seconds: number, prefetched?: Prefetched): Promise<void> {
    const generation = ++this.generation;
    window.clearTimeout(this.timer);
    // before the first key frame there is no whole picture yet: start at that one
    const frame = keyFrameBefore(this.frames, seconds * 1000) ?? this.frames[0] ?? null;
    const reader = new RecordReader(httpRanges(this.url), frame ? frame.offset : this.firstRecord, readSpan(this.frames, frame), prefetched);
    const sync = await reader.next();
    if (generation !== this.generation) return;
    if (!sync || sync.channel !== CHANNEL_SYNC) throw new Error("The recording has no picture to start from.");
    const framebuffer = new RfbFramebuffer(sync.data);
    if (!this.rfb) this.connect(sync.data); // its handshake runs while the records decode
    else framebuffer.redraw();
    const target = seconds * 1000;
    let pointer: { x: number; y: number } | null = null;
    let record = await reader.next();
    // the key frame's picture is the run of server records right after its sync record:
    // shown whole even when the target comes before its end (or before the first key frame)
    let picture = true;
    while (record && (record.elapsedMs <= target || picture) && generation === this.generation) {
      if (record.channel === CHANNEL_SERVER) framebuffer.feed(record.data);
      else picture = false;
      if (record.channel === CHANNEL_CLIENT) pointer = lastPointer(record.data) ?? pointer;
      record = await reader.next();
    }
    await this.channel?.started;
    if (generation !== this.generation) return;
    this.framebuffer = framebuffer;
    this.reader = reader;
    this.pointer = pointer;
    framebuffer.cursorChanged = true; // the shape this key frame knows, or none
    this.draw();
    this.upcoming = record;
    this.lastMs = target;
    this.position = seconds;
    this.wallAt = performance.now();
    this.events.onTime(seconds);
    if (this.playing) this.schedule(generation);
    else this.events.onState(false, record === null);
  }

  play(): void {
    if (this.playing) return;
    this.position = this.now();
    this.wallAt = performance.now();
    this.playing = true;
    this.events.onState(true, false);
    this.schedule(this.generation);
  }

  pause(): void {
    if (!this.playing) return;
    this.position = this.now();
    this.playing = false;
    window.clearTimeout(this.timer);
    this.events.onState(false, false);
  }

  setSpeed(speed: number): void {
    this.position = this.now();
    this.wallAt = performance.now();
    this.speed = speed;
  }

  /** A noVNC for the picture, shown the recorded ServerInit `serverInit`. */
  private connect(serverInit: Uint8Array): void {
    const channel = new RecordingChannel(serverInit);
    const host = document.createElement("div");
    host.className = "screen";
    this.container.prepend(host); // under the pointer's canvas
    const rfb = new RFB(host, channel as unknown as WebSocket, { shared: true });
    rfb.viewOnly = true;
    rfb.scaleViewport = true;
    rfb.background = "transparent";
    this.host = host;
    this.rfb = rfb;
    this.channel = channel;
    this.drawn = false;
  }

  close(): void {
    this.generation++;
    window.clearTimeout(this.timer);
    this.teardown();
    this.resizing?.disconnect();
    this.cursor?.remove();
    this.cursor = null;
  }

  /** A record that is due: server bytes into the framebuffer, the pointer's place. */
  private apply(record: StreamRecord): void {
    if (record.channel === CHANNEL_SERVER) this.framebuffer?.feed(record.data);
    else if (record.channel === CHANNEL_CLIENT) this.pointer = lastPointer(record.data) ?? this.pointer;
  }

  /** Show what changed since the last draw: one update for noVNC, the pointer moved. */
  private draw(): void {
    const framebuffer = this.framebuffer;
    const channel = this.channel;
    if (!framebuffer || !channel) return;
    const update = framebuffer.takeUpdate(!this.drawn);
    if (update) {
      channel.push(update);
      this.drawn = true;
    }
    if (framebuffer.cursorChanged) {
      framebuffer.cursorChanged = false;
      this.shapeCursor();
    }
    this.placeCursor();
  }

  private shapeCursor(): void {
    const shape = this.framebuffer?.cursor;
    if (!shape) {
      this.cursor?.remove();
      this.cursor = null;
      return;
    }
    if (!this.cursor) {
      this.cursor = document.createElement("canvas");
      this.cursor.className = "cursor";
      this.cursor.setAttribute("aria-hidden", "true");
      this.container.append(this.cursor);
    }
    this.cursor.width = shape.width;
    this.cursor.height = shape.height;
    this.cursor.getContext("2d")?.putImageData(new ImageData(shape.rgba, shape.width, shape.height), 0, 0);
  }

  /** The pointer's shape over noVNC's canvas, scaled with it, hotspot at the recorded place. */
  private placeCursor(): void {
    const cursor = this.cursor;
    const shape = this.framebuffer?.cursor;
    const screen = this.host?.querySelector("canvas");
    if (!cursor || !shape || !screen || !this.pointer || !this.framebuffer?.width) {
      if (cursor) cursor.hidden = true;
      return;
    }
    const box = this.container.getBoundingClientRect();
    const shown = screen.getBoundingClientRect();
    const scale = shown.width / this.framebuffer.width;
    const left = shown.left - box.left + (this.pointer.x - shape.hotX) * scale;
    const top = shown.top - box.top + (this.pointer.y - shape.hotY) * scale;
    cursor.style.transform = `translate(${left}px, ${top}px) scale(${scale})`;
    cursor.hidden = false;
  }

  private schedule(generation: number): void {
    window.clearTimeout(this.timer);
    this.timer = window.setTimeout(() => void this.step(generation), 0);
  }

  private async step(generation: number): Promise<void> {
    const reader = this.reader;
    if (!reader || !this.channel || !this.playing || generation !== this.generation) return;
    try {
      const due = this.now() * 1000;
      while (this.upcoming && this.upcoming.elapsedMs <= due) {
        this.apply(this.upcoming);
        this.lastMs = this.upcoming.elapsedMs;
        this.upcoming = await reader.next();
        if (generation !== this.generation) return;
      }
      this.draw();
    } catch (error) {
      this.playing = false;
      this.events.onError(error instanceof Error ? error.message : String(error));
      return;
    }
    if (this.upcoming) this.events.onTime(this.now());
    if (!this.upcoming) {
      this.position = Math.min(this.now(), this.lastMs / 1000);
      this.events.onTime(this.position);
      this.playing = false;
      this.events.onState(false, true);
      return;
    }
    const wait = Math.min(TICK_MS, Math.max(0, (this.upcoming.elapsedMs - this.now() * 1000) / this.speed));
    this.timer = window.setTimeout(() => void this.step(generation), wait);
  }

  private teardown(): void {
    const rfb = this.rfb;
    const host = this.host;
    this.rfb = null;
    this.host = null;
    this.channel = null;
    this.framebuffer = null;
    this.reader = null;
    this.upcoming = null;
    if (rfb) {
      try {
        rfb.disconnect();
      } catch {
        // already gone
      }
    }
    host?.remove();
  }
}
