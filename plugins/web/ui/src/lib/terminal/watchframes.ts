// The live view's socket frames (docs/terminals.md, "Watching a live terminal") handed on in
// order: output through the terminal's feed (batched during a flood, feed.ts), and the watched
// terminal's size between the output around it, so each piece of output is parsed at the size
// the watched terminal had when it was written.
import type { OutputFeed } from "./feed";

export interface Watched {
  sessionId: string;
  userId: string;
  username: string;
  connectionId: string;
  connectionName: string;
  protocol: string;
  cols: number;
  rows: number;
}

/** What the mirror does with the frames. */
export interface MirrorTarget {
  resize: (cols: number, rows: number) => void;
  /** The first frame: whose session it is, and its size. */
  watched: (watched: Watched) => void;
  /** The server's reason (its words, its stable code or ""), before it closes the socket. */
  error: (message: string, reason: string) => void;
}

/** One frame from the watch socket: a binary frame is output, a text frame JSON. */
export function routeWatchFrame(data: unknown, feed: OutputFeed, target: MirrorTarget): void {
  if (data instanceof ArrayBuffer) {
    feed.push(new Uint8Array(data));
    return;
  }
  let frame: Record<string, unknown>;
  try {
    frame = JSON.parse(String(data)) as Record<string, unknown>;
  } catch {
    return;
  }
  if (frame.type === "watch") {
    const watched = frame as unknown as Watched;
    feed.schedule(() => target.watched(watched));
  } else if (frame.type === "resize" && typeof frame.cols === "number" && typeof frame.rows === "number") {
    const { cols, rows } = frame;
    feed.schedule(() => target.resize(cols, rows));
  } else if (frame.type === "error" && typeof frame.message === "string") {
    target.error(frame.message, typeof frame.reason === "string" ? frame.reason : "");
  }
}
