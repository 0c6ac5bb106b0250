// A read-only xterm.js mirror of someone's running terminal over /ws/sessions/<id>/watch
// (docs/terminals.md, "Watching a live terminal"). Loaded on first use, like the terminal.
import "@xterm/xterm/css/xterm.css";
import { Terminal } from "@xterm/xterm";
import { api, call } from "../../api/client";
import { watchUrl, type JoinMode } from "../sessions";
import { closeReason } from "../closereason";
import { OutputFeed } from "./feed";
import { LINE_HEIGHT } from "./font";
import { routeWatchFrame, type Watched } from "./watchframes";

export type { Watched } from "./watchframes";

export type WatchState = "connecting" | "live" | "ended";

export interface WatchEvents {
  onWatched: (watched: Watched) => void;
  onState: (state: WatchState, detail: string, code: number) => void;
}

/** Follows session `sessionId` in a terminal inside `container`; a participant's keys are sent. */
export class WatchView {
  readonly terminal: Terminal;
  private socket: WebSocket | null = null;
  private lastError = "";
  private lastReason = "";
  /** Output in batches during a flood, as in the terminal itself; the size changes in order. */
  private readonly feed: OutputFeed;

  constructor(
    container: HTMLElement,
    private readonly sessionId: string,
    private readonly events: WatchEvents,
    private readonly mode: JoinMode = "watch",
  ) {
    this.terminal = new Terminal({
      disableStdin: mode !== "participant",
      cursorBlink: false,
      convertEol: false,
      scrollback: 1000,
      fontFamily: "DejaVu Sans Mono, monospace",
      fontSize: 14,
      lineHeight: LINE_HEIGHT,
      theme: { background: "#0f141a", foreground: "#e6ebf1", cursor: "#8fb8f8", selectionBackground: "#364152" },
    });
    this.terminal.open(container);
    this.feed = new OutputFeed((data, done) => this.terminal.write(data, done));
    if (mode === "participant") {
      this.terminal.onData((data) => {
        if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify({ type: "data", data }));
      });
    }
  }

  /** Open the socket: a fresh single-use ticket, then the current screen and the output. */
  async connect(): Promise<void> {
    this.lastError = "";
    this.lastReason = "";
    this.feed.clear(); // the server starts again with the whole screen
    this.events.onState("connecting", "", 0);
    let ticket: string;
    try {
      ticket = (await call<{ ticket: string }>(api.POST("/api/v1/auth/ws-ticket"))).ticket;
    } catch (error) {
      this.events.onState("ended", error instanceof Error ? error.message : "No ticket", 0);
      return;
    }
    const socket = new WebSocket(watchUrl(window.location, this.sessionId, ticket, this.mode));
    socket.binaryType = "arraybuffer";
    this.socket = socket;
    socket.onmessage = (event) =>
      routeWatchFrame(event.data, this.feed, {
        resize: (cols, rows) => this.terminal.resize(cols, rows),
        watched: (watched) => {
          this.terminal.resize(watched.cols, watched.rows);
          this.events.onWatched(watched);
          this.events.onState("live", "", 0);
        },
        error: (message, reason) => {
          [this.lastError, this.lastReason] = [message, reason];
        },
      });
    socket.onclose = (event) => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.events.onState("ended", closeReason(event.code, event.reason, this.lastError, this.lastReason), event.code);
    };
  }

  /** Close the socket and free the terminal. */
  dispose(): void {
    const socket = this.socket;
    this.socket = null;
    socket?.close(1000, "Viewer left");
    this.feed.clear();
    this.terminal.dispose();
  }
}
