// A read-only xterm.js mirror of someone's running terminal over /ws/sessions/<id>/watch
// (docs/terminals.md, "Watching a live terminal"). Loaded on first use, like the terminal.
import "@xterm/xterm/css/xterm.css";
import { Terminal } from "@xterm/xterm";
import { api, call } from "../../api/client";
import { watchUrl } from "../sessions";
import { closeReason } from "../closereason";

export type WatchState = "connecting" | "live" | "ended";

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

export interface WatchEvents {
  onWatched: (watched: Watched) => void;
  onState: (state: WatchState, detail: string, code: number) => void;
}

/** Follows session `sessionId` in a terminal inside `container`; nothing typed is sent. */
export class WatchView {
  readonly terminal: Terminal;
  private socket: WebSocket | null = null;
  private lastError = "";

  constructor(
    container: HTMLElement,
    private readonly sessionId: string,
    private readonly events: WatchEvents,
  ) {
    this.terminal = new Terminal({
      disableStdin: true,
      cursorBlink: false,
      convertEol: false,
      scrollback: 1000,
      fontFamily: "DejaVu Sans Mono, monospace",
      fontSize: 14,
      theme: { background: "#0f141a", foreground: "#e6ebf1", cursor: "#8fb8f8", selectionBackground: "#364152" },
    });
    this.terminal.open(container);
  }

  /** Open the socket: a fresh single-use ticket, then the current screen and the output. */
  async connect(): Promise<void> {
    this.lastError = "";
    this.events.onState("connecting", "", 0);
    let ticket: string;
    try {
      ticket = (await call<{ ticket: string }>(api.POST("/api/v1/auth/ws-ticket"))).ticket;
    } catch (error) {
      this.events.onState("ended", error instanceof Error ? error.message : "No ticket", 0);
      return;
    }
    const socket = new WebSocket(watchUrl(window.location, this.sessionId, ticket));
    socket.binaryType = "arraybuffer";
    this.socket = socket;
    socket.onmessage = (event) => {
      if (event.data instanceof ArrayBuffer) {
        this.terminal.write(new Uint8Array(event.data));
        return;
      }
      let frame: Record<string, unknown>;
      try {
        frame = JSON.parse(String(event.data)) as Record<string, unknown>;
      } catch {
        return;
      }
      if (frame.type === "watch") {
        const watched = frame as unknown as Watched;
        this.terminal.resize(watched.cols, watched.rows);
        this.events.onWatched(watched);
        this.events.onState("live", "", 0);
      } else if (frame.type === "resize" && typeof frame.cols === "number" && typeof frame.rows === "number") {
        this.terminal.resize(frame.cols, frame.rows);
      } else if (frame.type === "error" && typeof frame.message === "string") {
        this.lastError = frame.message;
      }
    };
    socket.onclose = (event) => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.events.onState("ended", closeReason(event.code, event.reason, this.lastError), event.code);
    };
  }

  /** Close the socket and free the terminal. */
  dispose(): void {
    const socket = this.socket;
    this.socket = null;
    socket?.close(1000, "Viewer left");
    this.terminal.dispose();
  }
}
