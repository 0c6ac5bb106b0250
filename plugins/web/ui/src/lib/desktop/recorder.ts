// The browser side of an RDP recording (docs/ui.md "Desktops"): MediaRecorder on the
// desktop canvas the person sees, WebM chunks uploaded as they are produced, input
// events (click, key, throttled move) posted in batches, finalize when the session ends.
import { api, call } from "../../api/client";
import { EventBatch, type InputKind } from "./events";

/** A chunk every 2 s: a tab closed mid-session loses at most about that much. */
export const CHUNK_MS = 2000;
/** Input events go up this often (and at the end). */
export const EVENT_FLUSH_MS = 2000;
const FRAME_RATE = 10;
const TYPES = ["video/webm;codecs=vp9", "video/webm;codecs=vp8", "video/webm"];

export class Recorder {
  private readonly recorder: MediaRecorder;
  private readonly batch: EventBatch;
  private uploads: Promise<void> = Promise.resolve();
  private readonly timer: ReturnType<typeof setInterval>;
  private readonly listeners: [string, (event: Event) => void][];
  private finished: Promise<void> | null = null;
  /** The last upload failure, in words (shown by the tab). */
  failure = "";

  constructor(
    private readonly sessionId: string,
    canvas: HTMLCanvasElement,
    private readonly target: HTMLElement,
  ) {
    const stream = canvas.captureStream(FRAME_RATE);
    const mimeType = TYPES.find((type) => MediaRecorder.isTypeSupported(type));
    this.recorder = new MediaRecorder(stream, { mimeType, videoBitsPerSecond: 1_500_000 });
    this.recorder.ondataavailable = (event) => {
      if (event.data.size > 0) this.upload(event.data);
    };
    this.batch = new EventBatch(performance.now());
    const record = (kind: InputKind) => (event: Event) => {
      if (kind === "key" && (event as KeyboardEvent).repeat) return;
      this.batch.add(kind, performance.now());
    };
    this.listeners = [
      ["pointerdown", record("click")],
      ["keydown", record("key")],
      ["pointermove", record("move")],
    ];
    for (const [type, listener] of this.listeners) target.addEventListener(type, listener, true);
    this.timer = setInterval(() => this.flushEvents(), EVENT_FLUSH_MS);
    this.recorder.start(CHUNK_MS);
  }

  private upload(chunk: Blob): void {
    const path = { session_id: this.sessionId };
    this.uploads = this.uploads.then(async () => {
      try {
        await call(
          api.POST("/api/v1/sessions/{session_id}/recording/chunk", {
            params: { path },
            body: chunk as never,
            bodySerializer: (body: unknown) => body as Blob,
            headers: { "Content-Type": "application/octet-stream" },
          }),
        );
      } catch (error) {
        this.failure = error instanceof Error ? error.message : "The recording could not be uploaded.";
      }
    });
  }

  private flushEvents(): Promise<void> {
    const events = this.batch.take();
    if (!events.length) return Promise.resolve();
    const path = { session_id: this.sessionId };
    return call(api.POST("/api/v1/sessions/{session_id}/recording/events", { params: { path }, body: events })).then(
      () => undefined,
      (error: unknown) => {
        this.failure = error instanceof Error ? error.message : "Input events could not be saved.";
      },
    );
  }

  /** Stop recording, upload what is left and finalize (once; later calls share it). */
  finish(): Promise<void> {
    this.finished ??= this.stop();
    return this.finished;
  }

  private async stop(): Promise<void> {
    clearInterval(this.timer);
    for (const [type, listener] of this.listeners) this.target.removeEventListener(type, listener, true);
    if (this.recorder.state !== "inactive") {
      const stopped = new Promise<void>((resolve) => this.recorder.addEventListener("stop", () => resolve(), { once: true }));
      this.recorder.stop(); // hands over the last chunk first
      await stopped;
    }
    for (const track of this.recorder.stream.getTracks()) track.stop();
    await this.uploads;
    await this.flushEvents();
    const path = { session_id: this.sessionId };
    try {
      await call(api.POST("/api/v1/sessions/{session_id}/recording/finalize", { params: { path } }));
    } catch (error) {
      this.failure = error instanceof Error ? error.message : "The recording could not be finalized.";
    }
  }
}
