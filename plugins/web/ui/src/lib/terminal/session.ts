// One xterm.js terminal wired to /ws/<protocol>. Loaded on first use (with xterm and
// its addons, and their CSS): never part of the sign-in bundle.
import "@xterm/xterm/css/xterm.css";
import { FitAddon } from "@xterm/addon-fit";
import { SearchAddon } from "@xterm/addon-search";
import { WebLinksAddon } from "@xterm/addon-web-links";
import { WebglAddon } from "@xterm/addon-webgl";
import { Terminal, type ITheme } from "@xterm/xterm";
import { api, call } from "../../api/client";
import { closeReason, isSignedOut, parseServerText, terminalUrl } from "./socket";

export type TerminalState = "connecting" | "connected" | "closed";

export interface Preferences {
  fontFamily: string;
  fontSize: number;
  cursorStyle: "block" | "bar" | "underline";
  cursorBlink: boolean;
  scrollback: number;
  theme: string;
}

export interface Events {
  onState: (state: TerminalState, detail: string, code: number) => void;
  /** Who watches this session through the live view ("" when nobody does). */
  onWatched?: (message: string) => void;
}

const THEMES: Record<string, ITheme> = {
  dark: { background: "#0f141a", foreground: "#e6ebf1", cursor: "#8fb8f8", selectionBackground: "#364152" },
  light: { background: "#ffffff", foreground: "#17202b", cursor: "#1f5fbf", selectionBackground: "#cfd6df" },
};

/** A terminal in `container`, connected to connection `connectionId` over `protocol`. */
export class TerminalSession {
  readonly terminal: Terminal;
  private readonly fit = new FitAddon();
  readonly search = new SearchAddon();
  private socket: WebSocket | null = null;
  private lastError = "";
  private readonly observer: ResizeObserver;
  private readonly sessionId = crypto.randomUUID();

  constructor(
    private readonly container: HTMLElement,
    private readonly connectionId: string,
    private readonly protocol: string,
    preferences: Preferences,
    private readonly events: Events,
  ) {
    this.terminal = new Terminal({
      fontFamily: preferences.fontFamily,
      fontSize: preferences.fontSize,
      cursorStyle: preferences.cursorStyle,
      cursorBlink: preferences.cursorBlink,
      scrollback: preferences.scrollback,
      theme: THEMES[preferences.theme] ?? THEMES.dark,
      allowProposedApi: true,
    });
    this.terminal.loadAddon(this.fit);
    this.terminal.loadAddon(this.search);
    this.terminal.loadAddon(
      new WebLinksAddon((_event, uri) => {
        window.open(uri, "_blank", "noopener,noreferrer");
      }),
    );
    this.terminal.open(container);
    try {
      const webgl = new WebglAddon();
      webgl.onContextLoss(() => webgl.dispose());
      this.terminal.loadAddon(webgl);
    } catch {
      // no WebGL (a headless browser, an old GPU): xterm's DOM renderer draws instead
    }
    this.terminal.onData((data) => this.send({ type: "data", data }));
    this.terminal.onResize(({ cols, rows }) => this.send({ type: "resize", cols, rows }));
    this.observer = new ResizeObserver(() => this.fitNow());
    this.observer.observe(container);
    this.fitNow();
  }

  /** Fit the terminal to its box (a hidden tab has no size: skipped until shown). */
  fitNow(): void {
    if (this.container.clientWidth > 0 && this.container.clientHeight > 0) this.fit.fit();
  }

  /** Open the socket (again): a fresh single-use ticket each time. */
  async connect(): Promise<void> {
    this.lastError = "";
    this.events.onState("connecting", "", 0);
    let ticket: string;
    try {
      ticket = (await call<{ ticket: string }>(api.POST("/api/v1/auth/ws-ticket"))).ticket;
    } catch (error) {
      this.events.onState("closed", error instanceof Error ? error.message : "No ticket", 0);
      return;
    }
    const url = terminalUrl(window.location, this.protocol, {
      ticket,
      connectionId: this.connectionId,
      sessionId: this.sessionId,
      cols: this.terminal.cols,
      rows: this.terminal.rows,
    });
    const socket = new WebSocket(url);
    socket.binaryType = "arraybuffer";
    this.socket = socket;
    socket.onmessage = (event) => {
      if (event.data instanceof ArrayBuffer) {
        this.terminal.write(new Uint8Array(event.data));
        return;
      }
      const frame = parseServerText(String(event.data));
      if (frame.kind === "status") this.events.onState("connected", frame.message, 0);
      else if (frame.kind === "error") this.lastError = frame.message;
      else if (frame.kind === "watchers") this.events.onWatched?.(frame.message);
      else this.terminal.write(String(event.data));
    };
    socket.onclose = (event) => {
      if (this.socket !== socket) return;
      this.socket = null;
      const reason = closeReason(event.code, event.reason, this.lastError);
      this.events.onState("closed", isSignedOut(event.code) ? `Signed out: ${reason}` : reason, event.code);
    };
  }

  private send(frame: object): void {
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(frame));
  }

  /** Keyboard focus into the terminal. */
  focus(): void {
    this.terminal.focus();
  }

  /** Close the socket and free the terminal. */
  dispose(): void {
    this.observer.disconnect();
    const socket = this.socket;
    this.socket = null;
    socket?.close(1000, "Tab closed");
    this.terminal.dispose();
  }
}
