// A VNC desktop: noVNC over the gateway's relay (/ws/vnc/<connectionId>). The relay
// logs in to the VNC server itself and offers the browser security type None, so the
// VNC password never reaches the page.
import RFB from "novnc-core/rfb.js";
import { initLogging } from "novnc-core/util/logging.js";
import { api, call } from "../../api/client";
import { closeReason, desktopCloseReason } from "../closereason";
import { relayUrl, type DesktopDriver, type DriverOptions, type Scaling } from "./driver";
import { strokes, type KeyCombo } from "./keys";

const CLOSE_REASON_WAIT_MS = 2000;

// noVNC reports failures on the console; the tab shows them to the person instead.
initLogging("none");

export class VncDriver implements DesktopDriver {
  readonly features = { viewOnly: true, scaling: true, resize: false };
  private rfb: RFB | null = null;
  private socket: WebSocket | null = null;
  private scaling: Scaling = "fit";
  private viewOnly = false;
  private failure = "";
  private userClosed = false;

  constructor(private readonly options: DriverOptions) {}

  async connect(): Promise<void> {
    this.teardown();
    this.failure = "";
    this.userClosed = false;
    const { events, connectionId, container } = this.options;
    events.onState("connecting", "", 0);
    let ticket: string;
    try {
      ticket = (await call<{ ticket: string }>(api.POST("/api/v1/auth/ws-ticket"))).ticket;
    } catch (error) {
      events.onState("closed", error instanceof Error ? error.message : "No ticket", 0);
      return;
    }
    const socket = new WebSocket(relayUrl(window.location, `vnc/${encodeURIComponent(connectionId)}`, { ticket }));
    this.socket = socket;
    let closed: CloseEvent | null = null;
    // registered before noVNC's own handler, so the reason is known when it reports
    socket.addEventListener("close", (event) => (closed = event));
    const rfb = new RFB(container, socket, { shared: true });
    this.rfb = rfb;
    rfb.background = "transparent";
    rfb.focusOnClick = true;
    this.apply();
    rfb.addEventListener("connect", () => {
      if (this.rfb === rfb) events.onState("connected", "", 0);
    });
    rfb.addEventListener("securityfailure", (event) => {
      const detail = (event as CustomEvent<{ status: number; reason?: string }>).detail;
      this.failure = detail.reason || "The VNC server refused the connection.";
    });
    rfb.addEventListener("clipboard", (event) => {
      events.onClipboard((event as CustomEvent<{ text: string }>).detail.text);
    });
    rfb.addEventListener("disconnect", () => {
      if (this.rfb !== rfb) return;
      this.rfb = null;
      this.socket = null;
      let reported = false;
      const report = () => {
        if (reported) return;
        reported = true;
        const code = closed?.code ?? 1006;
        const reason = this.userClosed ? "You disconnected." : closeReason(code, closed?.reason ?? "", this.failure);
        events.onState("closed", reason, code, desktopCloseReason(code, closed?.reason ?? ""));
      };
      if (closed || this.userClosed || socket.readyState === WebSocket.CLOSED) {
        report();
        return;
      }
      // noVNC can give up on a stream the server cut short before the close frame that
      // says why has been read: wait for it (briefly) so the server's reason is shown
      const timer = window.setTimeout(report, CLOSE_REASON_WAIT_MS);
      socket.addEventListener("close", () => {
        window.clearTimeout(timer);
        report();
      }, { once: true });
    });
  }

  private apply(): void {
    if (!this.rfb) return;
    this.rfb.scaleViewport = this.scaling === "fit";
    this.rfb.clipViewport = false;
    this.rfb.viewOnly = this.viewOnly;
  }

  setScaling(scaling: Scaling): void {
    this.scaling = scaling;
    this.apply();
  }

  setViewOnly(viewOnly: boolean): void {
    this.viewOnly = viewOnly;
    this.apply();
  }

  sendClipboard(text: string): void {
    this.rfb?.clipboardPasteFrom(text);
  }

  sendCombo(keyCombo: KeyCombo): void {
    for (const [key, down] of strokes(keyCombo.keys)) this.rfb?.sendKey(key.keysym, key.code, down);
  }

  focus(): void {
    this.rfb?.focus({ preventScroll: true });
  }

  releaseKeys(): void {
    // noVNC releases every pressed key when its canvas loses focus
    this.rfb?.blur();
  }

  canvas(): HTMLCanvasElement | null {
    return this.options.container.querySelector("canvas");
  }

  resized(): void {
    // noVNC watches its container and rescales by itself
  }

  disconnect(): void {
    this.userClosed = true;
    this.rfb?.disconnect();
  }

  private teardown(): void {
    const rfb = this.rfb;
    this.rfb = null;
    this.socket = null;
    rfb?.disconnect();
  }

  dispose(): void {
    this.teardown();
  }
}
