// An RDP desktop: IronRDP's web component (<iron-remote-desktop>) and its RDP backend
// (WASM, served by the gateway as an asset) through the gateway's RDCleanPath relay
// (/ws/rdp-raw). The gateway opens TCP and TLS to the server (verifying its certificate
// unless the connection says skipCertValidation); IronRDP logs in through that tunnel
// with the credentials of GET /connections/:id/session.
import "@devolutions/iron-remote-desktop";
import type { ClipboardData, IronError, Session, UserInteraction } from "@devolutions/iron-remote-desktop";
import { Backend, displayControl, init } from "@devolutions/iron-remote-desktop-rdp";
import { api, call } from "../../api/client";
import { closeReason, desktopCloseReason } from "../closereason";
import { relayUrl, type DesktopDriver, type DriverOptions } from "./driver";
import { strokes, type KeyCombo } from "./keys";
import { Recorder } from "./recorder";
import { desktopSize, ironErrorText } from "./rdpsize";

const SCALE_FIT = 1; // iron-remote-desktop's ScreenScale.Fit
const RESIZE_DELAY_MS = 400;

let loaded: Promise<void> | null = null;
/** The WASM module, compiled once per page. */
function loadIronRdp(): Promise<void> {
  loaded ??= init("OFF");
  return loaded;
}

// IronRDP opens its WebSocket itself and reports a closed socket without the server's
// words. The relay's close reason (a refused certificate, an unreachable host) is the
// best explanation there is, so sockets to /ws/rdp-raw note how they closed, by ticket.
// IronRDP drops the socket as soon as it reads the relay's RDCleanPath error, just
// before the relay's close frame (with the reason) arrives: its close waits a moment.
const socketCloses = new Map<string, CloseEvent>();
const closeWaiters = new Map<string, () => void>();
const CLOSE_GRACE_MS = 300;
const CLOSE_WAIT_MS = 1500;

/** How the relay socket of `ticket` closed, waiting a little for it; undefined if it did not. */
function closedSocket(ticket: string): Promise<CloseEvent | undefined> {
  if (socketCloses.has(ticket)) return Promise.resolve(socketCloses.get(ticket));
  return new Promise((resolve) => {
    const timer = setTimeout(() => done(), CLOSE_WAIT_MS);
    const done = () => {
      clearTimeout(timer);
      closeWaiters.delete(ticket);
      resolve(socketCloses.get(ticket));
    };
    closeWaiters.set(ticket, done);
  });
}
function trackRelaySockets(): void {
  const Original = window.WebSocket as typeof WebSocket & { hostgateTracked?: boolean };
  if (Original.hostgateTracked) return;
  class Tracked extends Original {
    static hostgateTracked = true;
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols);
      const parsed = new URL(String(url), window.location.href);
      const ticket = parsed.searchParams.get("ticket");
      if (ticket && parsed.pathname === "/ws/rdp-raw") {
        this.addEventListener("close", (event) => {
          // IronRDP dispatches a close event of its own ("client dropped") when it lets go
          if (!event.isTrusted) return;
          socketCloses.set(ticket, event);
          closeWaiters.get(ticket)?.();
        });
        const close = this.close.bind(this);
        this.close = (code?: number, reason?: string) => {
          if (this.readyState === Original.OPEN) setTimeout(() => close(code, reason), CLOSE_GRACE_MS);
          else close(code, reason);
        };
      }
    }
  }
  window.WebSocket = Tracked;
}

// iron-remote-desktop rescales 150 ms after it is shown, and fails (an uncaught error)
// if it was taken out of the page by then: a finished element stays, hidden, a moment.
const PARK_MS = 500;
function park(element: HTMLElement): void {
  let holder = document.getElementById("hostgate-parked-desktops");
  if (!holder) {
    holder = document.createElement("div");
    holder.id = "hostgate-parked-desktops";
    holder.hidden = true;
    document.body.append(holder);
  }
  holder.append(element);
  setTimeout(() => element.remove(), PARK_MS);
}

/** The relay socket's query: the ticket, the connection, and the recording it must keep uploading. */
export function relayParams(ticket: string, connectionId: string, recording: string | null): Record<string, string> {
  return recording ? { ticket, connectionId, recording } : { ticket, connectionId };
}

interface Credentials {
  host: string;
  port: number;
  username?: string | null;
  password?: string | null;
  domain?: string | null;
}

/** Backend with a SessionBuilder that hands this driver the session and the remote clipboard. */
function hookedBackend(hooks: { session: (session: Session) => void; clipboard: (data: ClipboardData) => void }) {
  function SessionBuilder() {
    const real = new Backend.SessionBuilder();
    let componentCallback: ((data: ClipboardData) => void) | null = null;
    return new Proxy(real, {
      get(target, property) {
        if (property === "remoteClipboardChangedCallback") {
          return (callback: (data: ClipboardData) => void) => {
            componentCallback = callback;
            return target;
          };
        }
        if (property === "connect") {
          return async () => {
            target.remoteClipboardChangedCallback((data: ClipboardData) => {
              hooks.clipboard(data);
              componentCallback?.(data);
            });
            const session = await target.connect();
            hooks.session(session as unknown as Session);
            return session;
          };
        }
        const value = Reflect.get(target, property, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }
  return { ...Backend, SessionBuilder };
}

export class RdpDriver implements DesktopDriver {
  readonly features = { viewOnly: false, scaling: false, resize: true };
  private element: HTMLElement | null = null;
  private ui: UserInteraction | null = null;
  private session: Session | null = null;
  private recorder: Recorder | null = null;
  private generation = 0;
  private resizeTimer: ReturnType<typeof setTimeout> | undefined;
  private size = { width: 0, height: 0 };
  private userClosed = false;

  constructor(private readonly options: DriverOptions) {
    trackRelaySockets();
  }

  async connect(): Promise<void> {
    this.teardown();
    const generation = ++this.generation;
    const { events, connectionId, container } = this.options;
    const current = () => generation === this.generation;
    let ticket = "";
    // the relay's close reason when it gave one (the server's side of the story), else IronRDP's
    const fail = async (fallback: string) => {
      void this.endRecording();
      const closed = ticket ? await closedSocket(ticket) : undefined;
      socketCloses.delete(ticket);
      if (!current()) return;
      const code = closed?.code ?? 0;
      const message = closed?.reason && !this.userClosed ? closeReason(code, closed.reason, "") : fallback;
      events.onState("closed", message, code, desktopCloseReason(code, closed?.reason ?? ""));
    };
    this.userClosed = false;
    events.onState("connecting", "", 0);
    try {
      await loadIronRdp();
      const path = { connection_id: connectionId };
      const credentials = await call<Credentials>(api.GET("/api/v1/connections/{connection_id}/session", { params: { path } }));
      const recording = await call<{ sessionId: string | null; shouldRecord: boolean }>(
        api.POST("/api/v1/sessions/rdp-session", { body: { connectionId } }),
      );
      ticket = (await call<{ ticket: string }>(api.POST("/api/v1/auth/ws-ticket"))).ticket;
      if (!current()) return;
      const ui = await this.mount(container);
      if (!current()) return;
      this.size = desktopSize(container.clientWidth, container.clientHeight);
      const builder = ui
        .configBuilder()
        .withUsername(credentials.username ?? "")
        .withPassword(credentials.password ?? "")
        .withDestination(`${credentials.host}:${credentials.port}`)
        // the gateway ends the relay when this recording's chunks stop (docs/terminals.md)
        .withProxyAddress(relayUrl(window.location, "rdp-raw", relayParams(ticket, connectionId, recording.sessionId)))
        .withAuthToken(ticket)
        .withDesktopSize(this.size)
        .withExtension(displayControl(true));
      if (credentials.domain) builder.withServerDomain(credentials.domain);
      const info = await ui.connect(builder.build());
      if (!current()) return;
      ui.setVisibility(true);
      ui.setScale(SCALE_FIT as never);
      events.onState("connected", "", 0);
      const canvas = this.canvas();
      if (recording.shouldRecord && recording.sessionId && canvas) {
        this.recorder = new Recorder(recording.sessionId, canvas, container);
      }
      info.run().then(
        (termination) => fail(this.userClosed ? "You disconnected." : termination.reason()),
        (error: unknown) => fail(ironErrorText(error as IronError)),
      );
    } catch (error) {
      void fail(ironErrorText(error as IronError));
    }
  }

  private mount(container: HTMLElement): Promise<UserInteraction> {
    const element = document.createElement("iron-remote-desktop");
    element.setAttribute("scale", "fit");
    element.setAttribute("flexcenter", "true");
    element.setAttribute("verbose", "false");
    element.className = "iron-desktop";
    (element as unknown as { module: unknown }).module = hookedBackend({
      session: (session) => (this.session = session),
      clipboard: (data) => {
        for (const item of data.items()) {
          if (item.mimeType().startsWith("text/plain")) this.options.events.onClipboard(String(item.value()));
        }
      },
    });
    const ready = new Promise<UserInteraction>((resolve) => {
      element.addEventListener(
        "ready",
        (event) => {
          const ui = (event as CustomEvent<{ irgUserInteraction: UserInteraction }>).detail.irgUserInteraction;
          // the tab syncs the clipboard itself (its panel, and this computer's clipboard on entry)
          ui.setEnableAutoClipboard(false);
          resolve(ui);
        },
        { once: true },
      );
    });
    this.element = element;
    container.append(element);
    return ready.then((ui) => (this.ui = ui));
  }

  setScaling(): void {
    // the remote resolution follows the window; the component fits it to the box
  }

  setViewOnly(): void {
    // not offered for RDP (features.viewOnly is false)
  }

  sendClipboard(text: string): void {
    const data = new Backend.ClipboardData();
    data.addText("text/plain", text);
    void this.session?.onClipboardPaste(data as unknown as ClipboardData);
  }

  sendCombo(keyCombo: KeyCombo): void {
    if (!this.session) return;
    const transaction = new Backend.InputTransaction();
    for (const [key, down] of strokes(keyCombo.keys)) {
      transaction.addEvent(down ? Backend.DeviceEvent.keyPressed(key.scancode) : Backend.DeviceEvent.keyReleased(key.scancode));
    }
    this.session.applyInputs(transaction as never);
  }

  focus(): void {
    this.canvas()?.focus({ preventScroll: true });
  }

  releaseKeys(): void {
    this.session?.releaseAllInputs();
  }

  canvas(): HTMLCanvasElement | null {
    return this.element?.shadowRoot?.querySelector("canvas") ?? null;
  }

  resized(): void {
    clearTimeout(this.resizeTimer);
    this.resizeTimer = setTimeout(() => {
      const { container } = this.options;
      if (!this.ui || !this.session || container.clientWidth === 0) return;
      const next = desktopSize(container.clientWidth, container.clientHeight);
      if (next.width === this.size.width && next.height === this.size.height) return;
      this.size = next;
      this.ui.resize(next.width, next.height);
    }, RESIZE_DELAY_MS);
  }

  disconnect(): void {
    this.userClosed = true;
    this.ui?.shutdown();
  }

  private endRecording(): Promise<void> {
    const recorder = this.recorder;
    this.recorder = null;
    return recorder ? recorder.finish() : Promise.resolve();
  }

  private teardown(): void {
    this.generation += 1;
    clearTimeout(this.resizeTimer);
    void this.endRecording();
    try {
      this.ui?.shutdown();
    } catch {
      // already ended
    }
    this.ui = null;
    this.session = null;
    if (this.element) park(this.element);
    this.element = null;
  }

  dispose(): void {
    this.teardown();
  }
}
