// Playback of a gateway-recorded VNC session: noVNC decodes the recorded server bytes in
// a canvas (no VNC server involved). A seek starts a fresh noVNC at the nearest key frame
// before the target, hands it everything up to the target at once, then plays on in time.
import RFB from "novnc-core/rfb.js";
import { initLogging } from "novnc-core/util/logging.js";
import { CHANNEL_SERVER, CHANNEL_SYNC, RecordReader, RecordingChannel, httpRanges, keyFrameBefore, parseHeader, type KeyFrame, type StreamRecord } from "./rfbrecording";

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
  ) {}

  /** Read the header, show the first picture (paused at 0). */
  async open(): Promise<void> {
    const head = await httpRanges(this.url)(0, 4095);
    const parsed = parseHeader(head);
    if (!parsed) throw new Error("The recording is empty.");
    this.firstRecord = parsed.start;
    await this.seek(0);
  }

  /** Seconds into the recording now. */
  now(): number {
    return this.playing ? this.position + ((performance.now() - this.wallAt) / 1000) * this.speed : this.position;
  }

  /** Go to `seconds`: from the key frame before it, decoded at once up to it. */
  async seek(seconds: number): Promise<void> {
    const generation = ++this.generation;
    window.clearTimeout(this.timer);
    this.teardown();
    // before the first key frame there is no whole picture yet: start at that one
    const frame = keyFrameBefore(this.frames, seconds * 1000) ?? this.frames[0] ?? null;
    const reader = new RecordReader(httpRanges(this.url), frame ? frame.offset : this.firstRecord);
    const sync = await reader.next();
    if (generation !== this.generation) return;
    if (!sync || sync.channel !== CHANNEL_SYNC) throw new Error("The recording has no picture to start from.");
    const channel = new RecordingChannel(sync.data);
    const host = document.createElement("div");
    host.className = "screen";
    this.container.append(host);
    this.host = host;
    const rfb = new RFB(host, channel as unknown as WebSocket, { shared: true });
    rfb.viewOnly = true;
    rfb.scaleViewport = true;
    rfb.background = "transparent";
    this.rfb = rfb;
    this.channel = channel;
    this.reader = reader;
    await channel.started;
    const target = seconds * 1000;
    let record = await reader.next();
    // the key frame's picture is the run of server records right after its sync record:
    // shown whole even when the target comes before its end (or before the first key frame)
    let picture = true;
    while (record && (record.elapsedMs <= target || picture) && generation === this.generation) {
      if (record.channel === CHANNEL_SERVER) channel.push(record.data);
      else picture = false;
      record = await reader.next();
    }
    if (generation !== this.generation) return;
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

  close(): void {
    this.generation++;
    window.clearTimeout(this.timer);
    this.teardown();
  }

  private schedule(generation: number): void {
    window.clearTimeout(this.timer);
    this.timer = window.setTimeout(() => void this.step(generation), 0);
  }

  private async step(generation: number): Promise<void> {
    const reader = this.reader;
    const channel = this.channel;
    if (!reader || !channel || !this.playing || generation !== this.generation) return;
    try {
      const due = this.now() * 1000;
      while (this.upcoming && this.upcoming.elapsedMs <= due) {
        if (this.upcoming.channel === CHANNEL_SERVER) channel.push(this.upcoming.data);
        this.lastMs = this.upcoming.elapsedMs;
        this.upcoming = await reader.next();
        if (generation !== this.generation) return;
      }
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
