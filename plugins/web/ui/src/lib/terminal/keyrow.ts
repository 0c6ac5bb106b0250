// The key row for terminals on touch screens: the keys a phone's keyboard lacks (Esc, Tab,
// the arrows, Ctrl held for the next key), as the bytes a terminal sends for them.

export type RowKey = "Escape" | "Tab" | "ArrowUp" | "ArrowDown" | "ArrowRight" | "ArrowLeft";

const ARROWS: Record<string, string> = { ArrowUp: "A", ArrowDown: "B", ArrowRight: "C", ArrowLeft: "D" };

/** The bytes for a key of the row; the arrows as the remote program asked (application
 * cursor mode: ESC O A, else ESC [ A). */
export function keyBytes(key: RowKey, applicationCursor = false): string {
  if (key === "Escape") return "\x1b";
  if (key === "Tab") return "\t";
  return `${applicationCursor ? "\x1bO" : "\x1b["}${ARROWS[key]}`;
}

/** What typing `data` sends with Ctrl held: a letter (or @[\]^_ and space) becomes its control
 * character ("c" -> ETX, Ctrl+C), "?" DEL; anything else goes as typed. */
export function withCtrl(data: string): string {
  if (data.length !== 1) return data;
  if (data === "?") return "\x7f";
  if (data === " ") return "\x00";
  const code = data.toUpperCase().charCodeAt(0);
  return code >= 64 && code <= 95 ? String.fromCharCode(code - 64) : data;
}
