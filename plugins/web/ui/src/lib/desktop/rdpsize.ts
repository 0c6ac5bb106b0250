// Pure helpers of the RDP driver (Vitest checks them without the WASM).

/** The remote resolution for a box: whole pixels, an even width, within what RDP allows. */
export function desktopSize(width: number, height: number): { width: number; height: number } {
  const clamp = (value: number, low: number, high: number) => Math.min(high, Math.max(low, Math.floor(value)));
  const w = clamp(width, 640, 8192);
  return { width: w - (w % 2), height: clamp(height, 480, 8192) };
}

/** IronRDP's error kinds (IronErrorKind), in words. */
const KINDS: Record<number, string> = {
  1: "The RDP server refused the user name or password.",
  2: "The RDP server refused the logon.",
  3: "The RDP server denied access to this account.",
  4: "The gateway could not reach the RDP server.",
  5: "The browser could not connect to the gateway.",
  6: "The RDP server and the browser client found no common security protocol.",
};

interface ErrorLike {
  kind?: () => number;
  backtrace?: () => string;
}

/** A sentence for an IronRDP failure: its kind, and the first line of its own message. */
export function ironErrorText(error: unknown): string {
  const shaped = (error ?? {}) as ErrorLike;
  if (typeof shaped.kind === "function") {
    const first = typeof shaped.backtrace === "function" ? shaped.backtrace().split("\n")[0].trim() : "";
    const kind = KINDS[shaped.kind()];
    if (kind && first) return `${kind} (${first})`;
    return kind || first || "The RDP session failed.";
  }
  if (error instanceof Error) return error.message;
  return String(error || "The RDP session failed.");
}
