// asciicast v2 recordings read in the page: the events, the player's time with an idle
// limit, and text search in the output. Pure, so Vitest checks them.

export interface CastEvent {
  /** Seconds since the recording started. */
  time: number;
  /** "o" output, "r" resize ("COLSxROWS"), others kept as they are. */
  code: string;
  data: string;
}

export interface Cast {
  width: number;
  height: number;
  title: string;
  events: CastEvent[];
}

/** Parse an asciicast v2 file; lines that are not whole events (a cut-short file) are skipped. */
export function parseCast(text: string): Cast {
  const lines = text.split("\n");
  let header: { width?: unknown; height?: unknown; title?: unknown } = {};
  try {
    header = JSON.parse(lines[0] ?? "{}");
  } catch {
    header = {};
  }
  const events: CastEvent[] = [];
  for (const line of lines.slice(1)) {
    if (!line.trim()) continue;
    try {
      const event = JSON.parse(line) as unknown;
      if (Array.isArray(event) && typeof event[0] === "number" && typeof event[1] === "string" && typeof event[2] === "string") {
        events.push({ time: event[0], code: event[1], data: event[2] });
      }
    } catch {
      // a partial last line of a recording still being written, or a damaged one
    }
  }
  return {
    width: typeof header.width === "number" ? header.width : 80,
    height: typeof header.height === "number" ? header.height : 24,
    title: typeof header.title === "string" ? header.title : "",
    events,
  };
}

export interface IdleClock {
  /** The player's time for a recording time. */
  toPlayer(time: number): number;
  /** The recording time for a player's time. */
  toRecording(time: number): number;
}

/** The last index with `values[i] <= value` (-1 when none); `values` ascending. */
function lastAtOrBefore(values: readonly number[], value: number): number {
  let low = 0;
  let high = values.length - 1;
  let found = -1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    if (values[middle] <= value) {
      found = middle;
      low = middle + 1;
    } else {
      high = middle - 1;
    }
  }
  return found;
}

/**
 * The player's clock with pauses longer than `limit` seconds cut to `limit` (asciinema-player's
 * idleTimeLimit does the same to its events; its markers and seeks are in the cut clock).
 * `limit` null: no cut.
 */
export function idleClock(events: readonly CastEvent[], limit: number | null): IdleClock {
  if (limit === null || !(limit > 0)) return { toPlayer: (t) => t, toRecording: (t) => t };
  const times: number[] = [];
  const cut: number[] = [];
  let previous = 0;
  let shift = 0;
  for (const event of events) {
    const pause = event.time - previous;
    if (pause > limit) shift += pause - limit;
    previous = event.time;
    times.push(event.time);
    cut.push(event.time - shift);
  }
  return {
    toPlayer(time: number): number {
      const i = lastAtOrBefore(times, time);
      if (i < 0) return Math.min(time, limit);
      return cut[i] + Math.min(time - times[i], limit);
    },
    toRecording(time: number): number {
      const i = lastAtOrBefore(cut, time);
      if (i < 0) return time;
      return times[i] + (time - cut[i]);
    },
  };
}

// CSI, OSC (ended by BEL or ST), other two-character escapes, and C0 controls but \n.
const ESCAPES = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|[\x00-\x08\x0b-\x1f\x7f]/g;

/** Output as plain text: escape sequences and control characters removed (line feeds kept). */
export function plainText(data: string): string {
  return data.replace(ESCAPES, "");
}

export interface OutputText {
  /** The plain text of every output event, joined. */
  text: string;
  /** `ends[i]`: the length of `text` after event `i` (of the output events). */
  ends: number[];
  /** `times[i]`: when output event `i` happened. */
  times: number[];
}

/** The recording's output as one searchable text, with where each event's part ends. */
export function outputText(events: readonly CastEvent[]): OutputText {
  let text = "";
  const ends: number[] = [];
  const times: number[] = [];
  for (const event of events) {
    if (event.code !== "o") continue;
    text += plainText(event.data);
    ends.push(text.length);
    times.push(event.time);
  }
  return { text, ends, times };
}

/**
 * When `query` appears in the output: for each match (case-insensitive), the recording time of
 * the event that completes it, in order, one per event.
 */
export function findInOutput(output: OutputText, query: string): number[] {
  const needle = query.toLowerCase();
  if (!needle) return [];
  const haystack = output.text.toLowerCase();
  const found: number[] = [];
  let from = 0;
  let lastEvent = -1;
  for (;;) {
    const at = haystack.indexOf(needle, from);
    if (at < 0) break;
    const last = at + needle.length - 1; // the match's last character
    // the first event whose part ends after `last`
    let low = 0;
    let high = output.ends.length - 1;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (output.ends[middle] > last) high = middle;
      else low = middle + 1;
    }
    if (low !== lastEvent) {
      found.push(output.times[low]);
      lastEvent = low;
    }
    from = at + 1;
  }
  return found;
}

/** "0:07", "1:05", "1:02:03" for seconds; tenths with `precise`. */
export function clock(seconds: number, precise = false): string {
  const safe = Math.max(0, Number.isFinite(seconds) ? seconds : 0);
  const whole = Math.floor(safe);
  const h = Math.floor(whole / 3600);
  const m = Math.floor((whole % 3600) / 60);
  const s = whole % 60;
  const tenths = precise ? `.${Math.floor((safe - whole) * 10)}` : "";
  const mm = h > 0 ? String(m).padStart(2, "0") : String(m);
  return `${h > 0 ? `${h}:` : ""}${mm}:${String(s).padStart(2, "0")}${tenths}`;
}
