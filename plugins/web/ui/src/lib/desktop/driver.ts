// What a desktop tab needs from a protocol's client (noVNC for VNC, IronRDP for RDP).
// The drivers are loaded on first use, with their libraries: never in the sign-in bundle.
import type { KeyCombo } from "./keys";

export type DesktopState = "connecting" | "connected" | "closed";
export type Scaling = "fit" | "real";

export interface DesktopEvents {
  /** The session's state; `detail` is the server's reason when it closed, `code` the socket's,
   * `reason` its stable code where the tab acts on it (`access_ended`, desktopCloseReason). */
  onState: (state: DesktopState, detail: string, code: number, reason?: string) => void;
  /** Text the remote side put on its clipboard. */
  onClipboard: (text: string) => void;
}

/** What a driver can do beyond the common set (the toolbar hides the rest). */
export interface DesktopFeatures {
  viewOnly: boolean;
  /** "real" size with scrollbars; RDP follows the window instead. */
  scaling: boolean;
  /** The remote resolution follows the window. */
  resize: boolean;
}

export interface DesktopDriver {
  readonly features: DesktopFeatures;
  /** Open the session (again): a fresh ticket each time. */
  connect(): Promise<void>;
  /** End the session from this side. */
  disconnect(): void;
  setScaling(scaling: Scaling): void;
  setViewOnly(viewOnly: boolean): void;
  /** Put text on the remote clipboard. */
  sendClipboard(text: string): void;
  sendCombo(combo: KeyCombo): void;
  /** Keyboard focus into the remote screen. */
  focus(): void;
  /** Release every key the remote side may think is held (the user left the desktop). */
  releaseKeys(): void;
  /** The canvas the remote screen is drawn on (what a recording captures). */
  canvas(): HTMLCanvasElement | null;
  /** The box changed size (shown, window resized, fullscreen). */
  resized(): void;
  dispose(): void;
}

export interface DriverOptions {
  connectionId: string;
  container: HTMLElement;
  events: DesktopEvents;
}

/** The socket URL of a relay on this origin: `/ws/<path>?<params>`. */
export function relayUrl(origin: { protocol: string; host: string }, path: string, params: Record<string, string>): string {
  const scheme = origin.protocol === "https:" ? "wss" : "ws";
  return `${scheme}://${origin.host}/ws/${path}?${new URLSearchParams(params)}`;
}
