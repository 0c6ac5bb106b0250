// Why a terminal, desktop or live-view socket closed, in words a user reads: the server's
// close code and reason (or the fuller text of the `error` frame before it) mapped to a
// sentence (docs/terminals.md, "Close codes"). The server's words are kept where they
// name something (a fingerprint, a host, a limit); the known ones are said plainly.
// The idle timeout's sign-out notice is here too: the same timeout closes terminals.

/** 4001 means the login session is gone: the app returns to sign-in. */
export function isSignedOut(code: number): boolean {
  return code === 4001;
}

/** The server's text as a sentence: a capital first letter, a full stop at the end. */
function sentence(text: string): string {
  const trimmed = text.trim();
  if (!trimmed) return "";
  const capital = trimmed[0].toUpperCase() + trimmed.slice(1);
  return /[.!?…)]$/.test(capital) ? capital : `${capital}.`;
}

/** `detail` after a colon when there is one (a server's reason, lower case as given). */
function withDetail(lead: string, detail: string | undefined): string {
  const text = (detail ?? "").trim().replace(/\.$/, "");
  return text ? `${lead}: ${text}.` : `${lead}.`;
}

/** "1 minute", "15 minutes". */
function minutes(count: number | string): string {
  return `${count} minute${Number(count) === 1 ? "" : "s"}`;
}

/**
 * The sign-in screen's notice after the idle timeout ended the login session
 * (`session_idle_timeout`), with the instance's `security.idle_timeout_minutes`.
 */
export function idleSignOutNotice(timeoutMinutes: number): string {
  return timeoutMinutes > 0
    ? `Idle timeout: you were signed out after ${minutes(timeoutMinutes)} without activity.`
    : "Idle timeout: you were signed out because the session was idle too long.";
}

type Rule = [RegExp, (found: RegExpMatchArray) => string];

// the server's reasons, matched on their text (the close code alone says little: 4003 is
// everything from a refused password to an idle timeout); first match wins
const RULES: Rule[] = [
  [
    /^closed after (\d+) minute\(s\) without input/i,
    ([, count]) => `Idle timeout: closed after ${minutes(count)} without input.`,
  ],
  [
    /host key of (.+?) has changed: trusted (\S+) \([^)]*\), presented (\S+)/i,
    ([, name, trusted, presented]) =>
      `Host key changed: ${name} presented ${presented} instead of the trusted ${trusted}. ` +
      "Someone who may edit the connection must accept the new key before it connects again.",
  ],
  [/^SSH host key changed during connect:?\s*(.*)$/i, ([, detail]) => withDetail("Host key changed while connecting", detail)],
  [
    /^(SSH|VNC|RDP|telnet)? ?authentication failed:?\s*(.*)$/i,
    ([, protocol, detail]) =>
      withDetail(`Authentication failed: the ${protocol ? `${protocol.toUpperCase()} ` : ""}server refused the connection's credentials`, detail),
  ],
  [/^authentication timeout/i, () => "No password was entered in time: the server stopped waiting."],
  [
    /network policy does not allow connecting to (.+?): (.+)$/i,
    ([, target, why]) => `Refused by the gateway's network policy: connecting to ${target} is not allowed (${why.replace(/\.$/, "")}).`,
  ],
  [
    /^the connection's target cannot be reached/i,
    () => "The server cannot be reached: it is down, or the gateway may not connect to it.",
  ],
  // "Connection lost: SSH connection lost: Connection lost" says one thing three times
  [/^(?:(?:SSH )?connection lost\b:?\s*)+(.*)$/i, ([, detail]) => withDetail("The connection to the server was lost", detail)],
  [/^shell closed$/i, () => "The server closed the connection (the shell ended)."],
  [/^connection closed$/i, () => "The server closed the connection."],
  [/^server shutting down/i, () => "The gateway is shutting down or restarting. Reconnect in a moment."],
  [/^session opened in another window/i, () => "This session was opened in another window or tab."],
  [/^session has been revoked/i, () => "Signed out: your sign-in was ended (revoked)."],
  [/^(invalid|expired|missing)\b.*ticket/i, () => "Signed out: your sign-in has expired. Sign in again."],
  [/^user deleted$/i, () => "Signed out: your account was deleted."],
  [/^the connection was deleted$/i, () => "The connection was deleted."],
  [/^the connection is no longer shared with you$/i, () => "The connection is no longer shared with you."],
  [/^your access to this connection ended$/i, () => "Your access to this connection ended (its approval expired or was withdrawn)."],
  [/^permission (\S+) was withdrawn$/i, ([, permission]) => `Your role no longer allows this connection (permission ${permission} was withdrawn).`],
  [/^connection not found$/i, () => "This connection does not exist any more, or you may not see it."],
];

// what a code says when the server gave no words
const CODES: Record<number, string> = {
  1001: "The gateway is shutting down or restarting. Reconnect in a moment.",
  1006: "The connection to the gateway was lost (the network, or the gateway stopped).",
  1009: "A message was too big for the gateway (more than 4 MiB).",
  1011: "The gateway met an unexpected error and closed the connection.",
  1013: "The gateway is busy or its shared state is unavailable. Try again in a moment.",
  4001: "Signed out: your sign-in has ended. Sign in again.",
  4002: "This connection does not exist any more, or you may not see it.",
  4007: "No password was entered in time: the server stopped waiting.",
  4008: "Too many sessions are open. Close one and try again.",
};

/**
 * Why the socket closed, in words: `lastError` is the server's `error` frame (the whole
 * text, where the close reason may be cut at 123 bytes), `reason` the close frame's.
 * 4001 (signed out) always reads "Signed out: ...".
 */
export function closeReason(code: number, reason: string, lastError: string): string {
  const text = (lastError || reason).trim();
  let said = "";
  for (const [pattern, say] of RULES) {
    const found = text.match(pattern);
    if (found) {
      said = say(found);
      break;
    }
  }
  if (!said && code === 4008 && text) said = `Too many sessions are open: ${sentence(text)} Close one and try again.`;
  if (!said) said = sentence(text) || CODES[code] || `The session ended (code ${code}).`;
  if (isSignedOut(code) && !said.startsWith("Signed out")) said = `Signed out: ${said}`;
  return said;
}
