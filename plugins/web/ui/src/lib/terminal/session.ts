// One xterm.js terminal wired to /ws/<protocol>. Loaded on first use (with xterm and
// its addons, and their CSS): never part of the sign-in bundle.
import "@xterm/xterm/css/xterm.css";
import { FitAddon } from "@xterm/addon-fit";
import { SearchAddon } from "@xterm/addon-search";
import { WebLinksAddon } from "@xterm/addon-web-links";
import { WebglAddon } from "@xterm/addon-webgl";
import { type ITerminalOptions, Terminal } from "@xterm/xterm";
import { api, call } from "../../api/client";
import { terminalTheme } from "../terminalthemes";
import { OutputFeed } from "./feed";
import { CursorBlink, hardwareWebgl } from "./renderer";
import "./blink.css";
import { closeReason } from "../closereason";
import { randomId } from "../ids";
import { LINE_HEIGHT } from "./font";
import { keyBytes, type RowKey, withCtrl } from "./keyrow";
import { isMultiline, parseServerText, terminalUrl, type Joiner, type CommandRuleState, type ModerationState } from "./socket";

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
  /** `reason`: the server's stable reason code of a close ("" when none, docs/terminals.md). */
  onState: (state: TerminalState, detail: string, code: number, reason?: string) => void;
  /** Who watches this session through the live view ("" when nobody does). */
  onWatched?: (message: string, joiners: Joiner[]) => void;
  /** The server's id of the session (invitations and removals of joiners name it). */
  onSessionId?: (sessionId: string) => void;
  /** A connection that needs a moderator: the input is held (waiting, paused) or open. */
  onModeration?: (state: ModerationState, message: string) => void;
  /** A command rule blocked, held, or let through (approved) or refused (denied) the line entered. */
  onCommandRule?: (state: CommandRuleState, message: string, rule: string, command: string) => void;
  /** Text pasted with a line break in it: the tab asks before it is sent. */
  onMultilinePaste?: (text: string) => void;
  /** The search found `count` matches, the current one is number `index` (0-based, -1: none). */
  onSearchResults?: (index: number, count: number) => void;
  /** The key row's Ctrl was used up by a key (it is released). */
  onCtrlReleased?: () => void;
}

/** What search decorations look like (the search addon needs them to count matches). */
const MATCHES = {
  matchBackground: "#6b5a00",
  matchOverviewRuler: "#e5c07b",
  activeMatchBackground: "#c28a00",
  activeMatchColorOverviewRuler: "#ffb000",
};

/**
 * Levers bench/web_terminal.py turns off and on within one run, through its init script
 * (`window.hgTerminalBench`); a normal page has none, and gets what the app chose:
 * `batch` the most bytes joined per write (0: each frame written as it comes, no feed),
 * `interval` the feed's wait during a flood (ms, 0: none), `options` more xterm.js options,
 * `url` the socket to open instead of the gateway's (the bench's plain server).
 * With levers, the terminal is `window.hgTerminal`: the bench copies its options.
 */
interface BenchLevers {
  batch?: number;
  interval?: number;
  options?: ITerminalOptions;
  url?: string;
}

type BenchWindow = { hgTerminalBench?: BenchLevers; hgTerminal?: Terminal };

function benchLevers(): BenchLevers {
  return (window as BenchWindow).hgTerminalBench ?? {};
}

/** A terminal in `container`, connected to connection `connectionId` over `protocol`. */
export class TerminalSession {
  readonly terminal: Terminal;
  private readonly fit = new FitAddon();
  readonly search = new SearchAddon();
  private socket: WebSocket | null = null;
  private lastError = "";
  private lastReason = "";
  private readonly observer: ResizeObserver;
  /** The DOM renderer's cursor blink (null with the WebGL renderer, which blinks cheaply). */
  private readonly blink: CursorBlink | null = null;
  private batch: OutputFeed | null = null;
  private readonly output: (data: Uint8Array | string) => void;
  private ctrlHeld = false; // the key row's Ctrl, for the next key typed

  constructor(
    private readonly container: HTMLElement,
    private readonly connectionId: string,
    private readonly protocol: string,
    preferences: Preferences,
    private readonly events: Events,
    /** The re-attach id: a socket opened again with it gets the same shell back while the gateway keeps it. */
    private readonly sessionId: string = randomId(),
  ) {
    const levers = benchLevers();
    this.output = this.feed(levers);
    this.terminal = new Terminal({
      fontFamily: preferences.fontFamily,
      fontSize: preferences.fontSize,
      cursorStyle: preferences.cursorStyle,
      cursorBlink: preferences.cursorBlink,
      scrollback: preferences.scrollback,
      theme: terminalTheme(preferences.theme),
      // every theme readable: colours a program picks too close to the background are adjusted
      minimumContrastRatio: 4.5,
      // room under the baseline: DejaVu Sans Mono (the default font) draws "_" below its
      // cell, which the DOM renderer clips away (xterm.js issue 4067): ".bash_logout" read
      // ".bash logout"
      lineHeight: LINE_HEIGHT,
      allowProposedApi: true,
      ...levers.options,
    });
    if ((window as BenchWindow).hgTerminalBench) (window as BenchWindow).hgTerminal = this.terminal;
    this.terminal.loadAddon(this.fit);
    this.terminal.loadAddon(this.search);
    this.terminal.loadAddon(
      new WebLinksAddon((_event, uri) => {
        window.open(uri, "_blank", "noopener,noreferrer");
      }),
    );
    this.terminal.open(container);
    // WebGL on a GPU; without one (no WebGL2, or a software rasteriser) xterm's DOM renderer
    let webgl = hardwareWebgl(document);
    if (webgl) {
      try {
        const addon = new WebglAddon();
        addon.onContextLoss(() => addon.dispose());
        this.terminal.loadAddon(addon);
      } catch {
        webgl = false; // the context could not be made after all: the DOM renderer draws
      }
    }
    if (!webgl) {
      this.blink = new CursorBlink(container);
      this.blink.set(preferences.cursorBlink, terminalTheme(preferences.theme).cursor);
    }
    this.terminal.onData((data) => {
      this.blink?.restart();
      if (this.ctrlHeld) {
        this.ctrlHeld = false;
        data = withCtrl(data);
        this.events.onCtrlReleased?.();
      }
      this.send({ type: "data", data });
    });
    // copy on select: whatever is selected lands in the clipboard
    this.terminal.onSelectionChange(() => {
      const text = this.terminal.getSelection();
      if (text && !this.searching) void navigator.clipboard?.writeText(text).catch(() => undefined);
    });
    // a paste with a line break in it waits for the user's yes (the tab's dialog)
    container.addEventListener(
      "paste",
      (event) => {
        const text = event.clipboardData?.getData("text/plain") ?? "";
        if (!isMultiline(text) || !this.events.onMultilinePaste) return;
        event.preventDefault();
        event.stopImmediatePropagation();
        this.events.onMultilinePaste(text);
      },
      { capture: true },
    );
    this.search.onDidChangeResults(({ resultIndex, resultCount }) => this.events.onSearchResults?.(resultIndex, resultCount));
    this.terminal.onResize(({ cols, rows }) => this.send({ type: "resize", cols, rows }));
    this.observer = new ResizeObserver(() => this.fitNow());
    this.observer.observe(container);
    this.fitNow();
  }

  private searching = false;

  /** Where the socket's output goes: xterm.js, in batches during a flood (feed.ts). */
  private feed(levers: BenchLevers): (data: Uint8Array | string) => void {
    // the socket's bytes as they are: xterm.js decodes UTF-8 itself (a TextDecoder first
    // made no difference, docs/performance-log/2026-11-lab-notes.md)
    const write = (data: Uint8Array | string, done?: () => void) => this.terminal.write(data, done);
    if (levers.batch === 0) return (data) => write(data);
    const feed = new OutputFeed(write, { maxBatch: levers.batch, interval: levers.interval });
    this.batch = feed;
    return (data) => feed.push(data);
  }

  /** Find `query` in the scrollback (the next match, or the previous one); scrolls to it. */
  find(query: string, backwards = false): boolean {
    this.searching = true; // the match is selected: that is no copy
    try {
      const options = { decorations: MATCHES };
      return backwards ? this.search.findPrevious(query, options) : this.search.findNext(query, options);
    } finally {
      this.searching = false;
    }
  }

  /** A key of the touch screens' key row, sent as the keyboard's key would be. */
  key(key: RowKey): void {
    this.terminal.input(keyBytes(key, this.terminal.modes.applicationCursorKeysMode), true);
    this.terminal.focus();
  }

  /** Hold Ctrl (the key row's) for the next key typed, or release it. */
  holdCtrl(held: boolean): void {
    this.ctrlHeld = held;
    this.terminal.focus();
  }

  /** Send text as if typed (bracketed when the remote program asked for it). */
  paste(text: string): void {
    this.terminal.paste(text);
  }

  /** New preferences: font, size, cursor, colours, scrollback change in place; the new size is sent. */
  apply(preferences: Preferences): void {
    const options = this.terminal.options;
    options.fontFamily = preferences.fontFamily || "monospace";
    if (preferences.fontSize >= 6 && preferences.fontSize <= 72) options.fontSize = preferences.fontSize;
    options.cursorStyle = preferences.cursorStyle;
    options.cursorBlink = preferences.cursorBlink;
    options.scrollback = preferences.scrollback;
    options.theme = terminalTheme(preferences.theme);
    this.blink?.set(preferences.cursorBlink, options.theme.cursor ?? "");
    this.fitNow();
  }

  /** Fit the terminal to its box (a hidden tab has no size: skipped until shown). */
  fitNow(): void {
    if (this.container.clientWidth > 0 && this.container.clientHeight > 0) this.fit.fit();
  }

  /** Open the socket (again): a fresh single-use ticket each time. */
  async connect(): Promise<void> {
    this.lastError = "";
    this.lastReason = "";
    this.events.onState("connecting", "", 0);
    let ticket: string;
    try {
      ticket = (await call<{ ticket: string }>(api.POST("/api/v1/auth/ws-ticket"))).ticket;
    } catch (error) {
      this.events.onState("closed", error instanceof Error ? error.message : "No ticket", 0);
      return;
    }
    const url = benchLevers().url ?? terminalUrl(window.location, this.protocol, {
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
        this.output(new Uint8Array(event.data));
        return;
      }
      const frame = parseServerText(String(event.data));
      if (frame.kind === "status") {
        // the gateway replays the shell's recent output next: it replaces what this
        // terminal showed, which it repeats (a new shell keeps the old scrollback above it)
        if (frame.message === "Reattached") this.terminal.reset();
        this.events.onState("connected", frame.message, 0);
      }
      else if (frame.kind === "error") [this.lastError, this.lastReason] = [frame.message, frame.reason];
      else if (frame.kind === "watchers") this.events.onWatched?.(frame.message, frame.joiners);
      else if (frame.kind === "session") this.events.onSessionId?.(frame.sessionId);
      else if (frame.kind === "moderation") this.events.onModeration?.(frame.state, frame.message);
      else if (frame.kind === "refused") this.output(`\r\n[hostgate] ${frame.message}\r\n`);
      else if (frame.kind === "commandRule") {
        // said in the terminal too, where the eyes are (as a front-door shell prints it)
        this.output(`\r\n[hostgate] ${frame.message}\r\n`);
        this.events.onCommandRule?.(frame.state, frame.message, frame.rule, frame.command);
      }
      else this.output(String(event.data));
    };
    socket.onclose = (event) => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.events.onState("closed", closeReason(event.code, event.reason, this.lastError, this.lastReason), event.code, this.lastReason);
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
    this.blink?.stop();
    this.batch?.clear();
    const socket = this.socket;
    this.socket = null;
    socket?.close(1000, "Tab closed");
    this.terminal.dispose();
  }
}
