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
