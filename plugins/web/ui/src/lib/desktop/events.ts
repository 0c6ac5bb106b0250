// Input events of a recorded desktop session in the API's write form {elapsed, type},
// elapsed in milliseconds since the recording started. Moves are throttled.

export type InputKind = "click" | "key" | "move";

/** At most one move per this many milliseconds. */
export const MOVE_INTERVAL_MS = 500;

export interface InputEvent {
  elapsed: number;
  type: InputKind;
}

/** Events waiting to be posted. */
export class EventBatch {
  private events: InputEvent[] = [];
  private lastMove = -Infinity;

  constructor(private readonly start: number) {}

  /** Note an event at time `now` (same clock as `start`); moves closer than the interval are dropped. */
  add(type: InputKind, now: number): void {
    if (type === "move") {
      if (now - this.lastMove < MOVE_INTERVAL_MS) return;
      this.lastMove = now;
    }
    this.events.push({ elapsed: Math.max(0, Math.round(now - this.start)), type });
  }

  /** The events so far, emptying the batch. */
  take(): InputEvent[] {
    const taken = this.events;
    this.events = [];
    return taken;
  }
}
