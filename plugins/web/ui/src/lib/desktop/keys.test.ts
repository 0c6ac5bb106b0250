import { describe, expect, it } from "vitest";
import { combo, COMBOS, isLeaveChord, strokes } from "./keys";

const key = (code: string, mods: { ctrl?: boolean; alt?: boolean; shift?: boolean }, type = "keydown") => ({
  type,
  code,
  ctrlKey: !!mods.ctrl,
  altKey: !!mods.alt,
  shiftKey: !!mods.shift,
});

describe("key combinations", () => {
  it("presses in order and releases in reverse", () => {
    const sequence = strokes(combo("ctrl-alt-del").keys).map(([k, down]) => `${k.code}${down ? "↓" : "↑"}`);
    expect(sequence).toEqual(["ControlLeft↓", "AltLeft↓", "Delete↓", "Delete↑", "AltLeft↑", "ControlLeft↑"]);
  });

  it("has a keysym and a scancode for every key, and unique ids", () => {
    for (const item of COMBOS) for (const k of item.keys) expect(k.keysym && k.scancode).toBeGreaterThan(0);
    expect(new Set(COMBOS.map((c) => c.id)).size).toBe(COMBOS.length);
    expect(() => combo("nope")).toThrow();
  });
});

describe("the leave key", () => {
  it("is the key-down completing Ctrl+Alt+Shift, whichever comes last", () => {
    expect(isLeaveChord(key("ShiftLeft", { ctrl: true, alt: true, shift: true }))).toBe(true);
    expect(isLeaveChord(key("ControlRight", { ctrl: true, alt: true, shift: true }))).toBe(true);
    expect(isLeaveChord(key("AltLeft", { ctrl: true, alt: true, shift: true }))).toBe(true);
  });

  it("is not two of them, a letter with all three, or a key-up", () => {
    expect(isLeaveChord(key("AltLeft", { ctrl: true, alt: true }))).toBe(false);
    expect(isLeaveChord(key("KeyA", { ctrl: true, alt: true, shift: true }))).toBe(false);
    expect(isLeaveChord(key("ShiftLeft", { ctrl: true, alt: true, shift: true }, "keyup"))).toBe(false);
  });
});
