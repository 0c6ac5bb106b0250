// Which renderer a terminal draws with. xterm.js's WebGL renderer is the fast one on a
// GPU; on a software WebGL (SwiftShader, llvmpipe: a VM, a remote desktop, a headless
// browser) every frame is rasterised on the CPU and `cat` of a big file ran about five
// times slower than with the DOM renderer (docs/performance.md), so the DOM renderer
// draws there instead.

/** Renderer names of WebGL implementations that draw on the CPU. */
const SOFTWARE = /swiftshader|llvmpipe|softpipe|lavapipe|software|basic render driver/i;

/** Whether a WebGL renderer name (UNMASKED_RENDERER_WEBGL) is a software rasteriser. */
export function isSoftwareRenderer(name: string): boolean {
  return SOFTWARE.test(name);
}

/** Whether this browser has WebGL2 drawn by a GPU: then the WebGL renderer is used. */
export function hardwareWebgl(document: Document): boolean {
  const canvas = document.createElement("canvas");
  let gl: WebGL2RenderingContext | null = null;
  try {
    gl = canvas.getContext("webgl2", { failIfMajorPerformanceCaveat: true });
    if (!gl) return false;
    const info = gl.getExtension("WEBGL_debug_renderer_info");
    const name = String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER) ?? "");
    return !isSoftwareRenderer(name);
  } catch {
    return false;
  } finally {
    gl?.getExtension("WEBGL_lose_context")?.loseContext();
  }
}

/** Half of xterm.js's one-second blink: the cursor is shown, then hidden, this long. */
export const BLINK_HALF_MS = 500;

/**
 * The DOM renderer's cursor blink as a class toggled twice a second on the terminal's
 * box (blink.css), not xterm.js's CSS animation: a CSS animation of colours makes the
 * page draw every frame, so an idle terminal kept a core busy and a keystroke's echo
 * waited for the next frame (26 ms vs 8 ms at p50, docs/performance-log/2026-11-lab-notes.md).
 */
export class CursorBlink {
  private timer: ReturnType<typeof setInterval> | null = null;

  constructor(private readonly box: HTMLElement) {}

  /** Blink (or not) with this cursor colour. */
  set(blink: boolean, cursor: string): void {
    this.box.style.setProperty("--hg-cursor", cursor);
    this.box.classList.toggle("hg-blink", blink);
    if (blink) this.restart();
    else this.stop();
  }

  /** Show the cursor now and blink from here (after a key, as xterm.js does). */
  restart(): void {
    if (!this.box.classList.contains("hg-blink")) return;
    if (this.timer !== null) clearInterval(this.timer);
    this.box.classList.remove("hg-blink-off");
    this.timer = setInterval(() => this.box.classList.toggle("hg-blink-off"), BLINK_HALF_MS);
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    this.box.classList.remove("hg-blink-off");
  }
}
