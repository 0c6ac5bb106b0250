// Key combinations a desktop tab sends on request, and the key that leaves a desktop.
// Pure data and functions, so Vitest checks them; the drivers turn a combination into
// VNC keysyms or RDP scancodes.

/** One key of a combination: its X keysym (VNC), its PC scancode (RDP) and DOM code. */
export interface ComboKey {
  keysym: number;
  scancode: number;
  code: string;
}

/** A combination: keys pressed in order, released in reverse. */
export interface KeyCombo {
  id: string;
  label: string;
  keys: ComboKey[];
}

const CTRL: ComboKey = { keysym: 0xffe3, scancode: 0x1d, code: "ControlLeft" };
const ALT: ComboKey = { keysym: 0xffe9, scancode: 0x38, code: "AltLeft" };
const SHIFT: ComboKey = { keysym: 0xffe1, scancode: 0x2a, code: "ShiftLeft" };
const DELETE: ComboKey = { keysym: 0xffff, scancode: 0xe053, code: "Delete" };
const TAB: ComboKey = { keysym: 0xff09, scancode: 0x0f, code: "Tab" };
const ESCAPE: ComboKey = { keysym: 0xff1b, scancode: 0x01, code: "Escape" };
const F4: ComboKey = { keysym: 0xffc1, scancode: 0x3e, code: "F4" };
const SUPER: ComboKey = { keysym: 0xffeb, scancode: 0xe05b, code: "MetaLeft" };
const PRINT: ComboKey = { keysym: 0xff61, scancode: 0xe037, code: "PrintScreen" };
const W: ComboKey = { keysym: 0x77, scancode: 0x11, code: "KeyW" };
const BACKSPACE: ComboKey = { keysym: 0xff08, scancode: 0x0e, code: "Backspace" };

/** Keys a browser keeps for itself (or an OS takes first), sent from the Keys menu. */
export const COMBOS: KeyCombo[] = [
  { id: "ctrl-alt-del", label: "Ctrl+Alt+Del", keys: [CTRL, ALT, DELETE] },
  { id: "alt-tab", label: "Alt+Tab", keys: [ALT, TAB] },
  { id: "alt-f4", label: "Alt+F4", keys: [ALT, F4] },
  { id: "ctrl-esc", label: "Ctrl+Esc", keys: [CTRL, ESCAPE] },
  { id: "ctrl-w", label: "Ctrl+W", keys: [CTRL, W] },
  { id: "ctrl-shift-esc", label: "Ctrl+Shift+Esc", keys: [CTRL, SHIFT, ESCAPE] },
  { id: "ctrl-alt-backspace", label: "Ctrl+Alt+Backspace", keys: [CTRL, ALT, BACKSPACE] },
  { id: "super", label: "Windows / Super key", keys: [SUPER] },
  { id: "print", label: "Print Screen", keys: [PRINT] },
];

/** A combination by id (the toolbar's button sends Ctrl+Alt+Del directly). */
export function combo(id: string): KeyCombo {
  const found = COMBOS.find((c) => c.id === id);
  if (!found) throw new Error(`unknown key combination ${id}`);
  return found;
}

/** The presses and releases of a combination, in order: [key, down]. */
export function strokes(keys: ComboKey[]): [ComboKey, boolean][] {
  return [...keys.map((k): [ComboKey, boolean] => [k, true]), ...[...keys].reverse().map((k): [ComboKey, boolean] => [k, false])];
}

/** The documented key that leaves a desktop: Ctrl+Alt+Shift, pressed together. */
export const LEAVE_KEY_LABEL = "Ctrl+Alt+Shift";

const MODIFIER_CODES = new Set(["ControlLeft", "ControlRight", "AltLeft", "AltRight", "ShiftLeft", "ShiftRight"]);

/** True for the key-down that completes Ctrl+Alt+Shift (whichever of the three comes last). */
export function isLeaveChord(event: { type: string; code: string; ctrlKey: boolean; altKey: boolean; shiftKey: boolean }): boolean {
  return event.type === "keydown" && MODIFIER_CODES.has(event.code) && event.ctrlKey && event.altKey && event.shiftKey;
}
