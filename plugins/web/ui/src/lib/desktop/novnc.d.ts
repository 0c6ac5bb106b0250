// The parts of noVNC's core the VNC driver uses (noVNC ships no types). "novnc-core/" is
// a Vite alias for node_modules/@novnc/novnc/core/, whose package exports only rfb.js.
declare module "novnc-core/rfb.js" {
  export default class RFB extends EventTarget {
    constructor(target: HTMLElement, urlOrChannel: string | WebSocket, options?: { shared?: boolean; wsProtocols?: string[] });
    scaleViewport: boolean;
    clipViewport: boolean;
    resizeSession: boolean;
    viewOnly: boolean;
    focusOnClick: boolean;
    background: string;
    qualityLevel: number;
    compressionLevel: number;
    disconnect(): void;
    sendCtrlAltDel(): void;
    sendKey(keysym: number, code: string | null, down?: boolean): void;
    clipboardPasteFrom(text: string): void;
    focus(options?: FocusOptions): void;
    blur(): void;
  }
}

declare module "novnc-core/util/logging.js" {
  export function initLogging(level: "debug" | "info" | "warn" | "error" | "none"): void;
}

declare module "novnc-core/inflator.js" {
  export default class Inflator {
    setInput(data: Uint8Array | null): void;
    inflate(expected: number): Uint8Array;
    reset(): void;
  }
}
