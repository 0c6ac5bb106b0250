// The terminal WebSocket's frames (docs/terminals.md), pure so Vitest checks them.

/** The socket URL for a terminal of `protocol` on this origin. */
export function terminalUrl(
  origin: { protocol: string; host: string },
  protocol: string,
  params: { ticket: string; connectionId: string; sessionId: string; cols: number; rows: number },
): string {
  const scheme = origin.protocol === "https:" ? "wss" : "ws";
  const query = new URLSearchParams({
    ticket: params.ticket,
    connectionId: params.connectionId,
    sessionId: params.sessionId,
    cols: String(params.cols),
    rows: String(params.rows),
  });
  return `${scheme}://${origin.host}/ws/${encodeURIComponent(protocol)}?${query}`;
}

/** Someone watching or joined to the session (docs/terminals.md, "Joining a live terminal"). */
export interface Joiner {
  userId: string;
  username: string;
  displayName: string;
  mode: "watch" | "observer" | "participant";
  moderator: boolean;
}

export type ModerationState = "waiting" | "active" | "paused";

export type ServerText =
  | { kind: "status"; message: string }
  | { kind: "error"; message: string; reason: string }
  | { kind: "watchers"; message: string; count: number; joiners: Joiner[] }
  | { kind: "session"; sessionId: string }
  | { kind: "moderation"; state: ModerationState; message: string }
  | { kind: "refused"; action: string; message: string }
  | { kind: "commandRule"; state: CommandRuleState; message: string; rule: string; command: string; heldId: string }
  | { kind: "other" };

/** What a command rule did with the line just entered (docs/terminals.md, "Command rules"). */
export type CommandRuleState = "blocked" | "held" | "approved" | "denied";
const RULE_STATES: readonly string[] = ["blocked", "held", "approved", "denied"];

/** A text frame from the server: a status, an error (the reason before a close), who watches, or other. */
export function parseServerText(text: string): ServerText {
  try {
    const frame = JSON.parse(text) as { type?: unknown; message?: unknown; reason?: unknown; watchers?: unknown; sessionId?: unknown; state?: unknown };
    if (frame && frame.type === "session" && typeof frame.sessionId === "string") return { kind: "session", sessionId: frame.sessionId };
    if (frame && typeof frame.message === "string") {
      if (frame.type === "moderation" && (frame.state === "waiting" || frame.state === "active" || frame.state === "paused")) {
        return { kind: "moderation", state: frame.state, message: frame.message };
      }
      if (frame.type === "status") return { kind: "status", message: frame.message };
      // a per-action right refused (a paste): the gateway dropped it, the user is told why
      if (frame.type === "commandRule" && typeof frame.state === "string" && RULE_STATES.includes(frame.state)) {
        const rule = frame as { rule?: unknown; command?: unknown; heldId?: unknown };
        const text = (value: unknown) => (typeof value === "string" ? value : "");
        return { kind: "commandRule", state: frame.state as CommandRuleState, message: frame.message, rule: text(rule.rule), command: text(rule.command), heldId: text(rule.heldId) };
      }
      if (frame.type === "refused") return { kind: "refused", action: String((frame as { action?: unknown }).action ?? ""), message: frame.message };
      // `reason`: the stable code (docs/terminals.md); "" from a server that sends none
      if (frame.type === "error") return { kind: "error", message: frame.message, reason: typeof frame.reason === "string" ? frame.reason : "" };
      if (frame.type === "watchers") {
        const joiners = (Array.isArray(frame.watchers) ? frame.watchers : []).map((w: Partial<Joiner>): Joiner => ({
          userId: String(w.userId ?? ""),
          username: String(w.username ?? ""),
          displayName: String(w.displayName ?? ""),
          mode: w.mode === "observer" || w.mode === "participant" ? w.mode : "watch",
          moderator: w.moderator === true,
        }));
        const count = joiners.length;
        return { kind: "watchers", message: count ? frame.message : "", count, joiners };
      }
    }
  } catch {
    // not JSON
  }
  return { kind: "other" };
}

/** Whether pasted text asks for a confirmation: a line break in it would run a command. */
export function isMultiline(text: string): boolean {
  return /[\r\n]/.test(text);
}
