import { afterEach, describe, expect, it, vi } from "vitest";
import { BLINK_HALF_MS, CursorBlink, isSoftwareRenderer } from "./renderer";

describe("isSoftwareRenderer", () => {
  it("knows the CPU rasterisers", () => {
    for (const name of [
      "ANGLE (Google, Vulkan 1.3.0 (SwiftShader Device (Subzero) (0x0000C0DE)), SwiftShader driver)",
      "Google SwiftShader",
      "llvmpipe (LLVM 15.0.6, 256 bits)",
      "Mesa softpipe",
      "ANGLE (Microsoft, Microsoft Basic Render Driver Direct3D11 vs_5_0 ps_5_0, D3D11)",
    ]) {
      expect(isSoftwareRenderer(name), name).toBe(true);
    }
  });
  it("keeps GPUs", () => {
    for (const name of [
      "ANGLE (NVIDIA, NVIDIA GeForce RTX 3060 (0x00002504) Direct3D11 vs_5_0 ps_5_0, D3D11)",
      "ANGLE (Intel, Mesa Intel(R) UHD Graphics 620 (KBL GT2), OpenGL 4.6)",
      "Apple M1",
      "Adreno (TM) 640",
      "WebKit WebGL",
    ]) {
      expect(isSoftwareRenderer(name), name).toBe(false);
    }
  });
});

/** Just what CursorBlink touches of the terminal's box. */
function fakeBox() {
  const classes = new Set<string>();
  const style = new Map<string, string>();
  return {
    classes,
    style,
    element: {
      classList: {
        contains: (name: string) => classes.has(name),
        remove: (name: string) => void classes.delete(name),
        toggle: (name: string, force?: boolean) => {
          const on = force ?? !classes.has(name);
          if (on) classes.add(name);
          else classes.delete(name);
          return on;
        },
      },
      style: { setProperty: (name: string, value: string) => void style.set(name, value) },
    } as unknown as HTMLElement,
  };
}

describe("CursorBlink", () => {
  afterEach(() => vi.useRealTimers());

  it("hides and shows the cursor every half second, shown again after a key", () => {
    vi.useFakeTimers();
    const box = fakeBox();
    const blink = new CursorBlink(box.element);
    blink.set(true, "#aeafad");
    expect(box.style.get("--hg-cursor")).toBe("#aeafad");
    expect([...box.classes]).toEqual(["hg-blink"]);
    vi.advanceTimersByTime(BLINK_HALF_MS);
    expect(box.classes.has("hg-blink-off")).toBe(true);
    vi.advanceTimersByTime(BLINK_HALF_MS);
    expect(box.classes.has("hg-blink-off")).toBe(false);
    vi.advanceTimersByTime(BLINK_HALF_MS);
    blink.restart(); // a key: shown at once, the next change half a second later
    expect(box.classes.has("hg-blink-off")).toBe(false);
    vi.advanceTimersByTime(BLINK_HALF_MS - 1);
    expect(box.classes.has("hg-blink-off")).toBe(false);
    vi.advanceTimersByTime(1);
    expect(box.classes.has("hg-blink-off")).toBe(true);
  });

  it("stops with the preference off (no timer left) and after stop()", () => {
    vi.useFakeTimers();
    const box = fakeBox();
    const blink = new CursorBlink(box.element);
    blink.set(true, "#fff");
    vi.advanceTimersByTime(BLINK_HALF_MS);
    blink.set(false, "#000");
    expect(box.classes.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    blink.restart(); // a key with blinking off changes nothing
    expect(vi.getTimerCount()).toBe(0);
    blink.set(true, "#fff");
    blink.stop();
    expect(vi.getTimerCount()).toBe(0);
    expect(box.classes.has("hg-blink-off")).toBe(false);
  });
});
