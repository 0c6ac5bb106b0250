import { describe, expect, it } from "vitest";
import { OutputFeed } from "./feed";
import { routeWatchFrame, type MirrorTarget } from "./watchframes";

/** A mirror whose xterm.js stand-in parses a write only when `finish()` is called. */
function mirror() {
  const log: string[] = [];
  const callbacks: (() => void)[] = [];
  const feed = new OutputFeed(
    (data, done) => {
      log.push(`output ${new TextDecoder().decode(data as Uint8Array)}`);
      callbacks.push(done);
    },
    { interval: 0 },
  );
  const target: MirrorTarget = {
    resize: (cols, rows) => log.push(`resize ${cols}x${rows}`),
    watched: (watched) => log.push(`watched ${watched.username} ${watched.cols}x${watched.rows}`),
    error: (message, reason) => log.push(`error ${message}${reason ? ` (${reason})` : ""}`),
  };
  const frame = (data: unknown) => routeWatchFrame(data, feed, target);
  const finishAll = () => {
    while (callbacks.length) callbacks.shift()?.();
  };
  return { log, frame, finishAll, finish: () => callbacks.shift()?.() };
}

const output = (text: string) => new TextEncoder().encode(text).buffer as ArrayBuffer;

describe("the live view's frames", () => {
  it("apply a resize after the output before it and before the output after it", () => {
    const m = mirror();
    m.frame(JSON.stringify({ type: "watch", username: "alice", cols: 80, rows: 24 }));
    m.frame(output("wide "));
    m.frame(output("table"));
    m.frame(JSON.stringify({ type: "resize", cols: 120, rows: 40 }));
    m.frame(output("after"));
    // the first output is still being parsed: the resize must not jump ahead of it
    expect(m.log).toEqual(["watched alice 80x24", "output wide "]);
    m.finish();
    expect(m.log.at(-1)).toBe("output table");
    m.finish();
    expect(m.log).toEqual(["watched alice 80x24", "output wide ", "output table", "resize 120x40", "output after"]);
  });

  it("join output around no resize into one write while xterm.js is busy", () => {
    const m = mirror();
    m.frame(output("a"));
    m.frame(output("b"));
    m.frame(output("c"));
    m.finishAll();
    expect(m.log).toEqual(["output a", "output bc"]);
  });

  it("keep the server's reason and ignore what is not a frame", () => {
    const m = mirror();
    m.frame("not json");
    m.frame(JSON.stringify({ type: "resize", cols: "wide" }));
    m.frame(JSON.stringify({ type: "error", message: "Session ended" }));
    m.frame(JSON.stringify({ type: "error", message: "The watched session ended", reason: "session_ended" }));
    expect(m.log).toEqual(["error Session ended", "error The watched session ended (session_ended)"]);
  });
});
