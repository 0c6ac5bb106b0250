// Why a terminal, desktop or live-view socket closed, in words a user reads: the server's
// close code and reason (or the fuller text of the `error` frame before it) mapped to a
// sentence (docs/terminals.md, "Close codes"). The server's words are kept where they
// name something (a fingerprint, a host, a limit); the known ones are said plainly.
// The idle timeout's sign-out notice is here too: the same timeout closes terminals.
import { plainOsErrors } from "./oserror";

/** 4001 means the login session is gone: the app returns to sign-in. */
export function isSignedOut(code: number): boolean {
  return code === 4001;
}

/** The server's text as a sentence: a capital first letter, a full stop at the end. */
function sentence(text: string): string {
  const trimmed = plainOsErrors(text.trim());
  if (!trimmed) return "";
  const capital = trimmed[0].toUpperCase() + trimmed.slice(1);
  return /[.!?…)]$/.test(capital) ? capital : `${capital}.`;
}

/** `detail` after a colon when there is one (a server's reason, lower case as given). */
function withDetail(lead: string, detail: string | undefined): string {
  const text = plainOsErrors((detail ?? "").trim()).replace(/\.$/, "");
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

/** How one reason code reads: its rules pick the detail out of the server's text, `plain` says it without them. */
interface Reason {
  rules: Rule[];
  plain: (text: string) => string;
}

const signedOutExpired = "Signed out: your sign-in has expired. Sign in again.";
const notFound = "This connection does not exist any more, or you may not see it.";

// the server's reason codes (the `error` frame's `reason`, docs/terminals.md "Reason codes"),
// each with the rules that read the detail from its text; in the order the text alone is
// tried when a server sends no code (first match wins)
const REASONS: Record<string, Reason> = {
  idle_timeout: {
    rules: [[/^closed after (\d+) minute\(s\) without input/i, ([, count]) => `Idle timeout: closed after ${minutes(count)} without input.`]],
    plain: () => "Idle timeout: closed after a while without input.",
  },
  host_key_changed: {
    rules: [
      [
        /host key of (.+?) has changed: trusted (\S+) \([^)]*\), presented (\S+)/i,
        ([, name, trusted, presented]) =>
          `Host key changed: ${name} presented ${presented} instead of the trusted ${trusted}. ` +
          "Someone who may edit the connection must accept the new key before it connects again.",
      ],
      [/^SSH host key changed during connect:?\s*(.*)$/i, ([, detail]) => withDetail("Host key changed while connecting", detail)],
    ],
    plain: (text) => withDetail("The server's host key changed", text),
  },
  host_key_unconfirmed: {
    rules: [
      [
        /host key of (.+?) is not trusted yet: it presents (\S+)/i,
        ([, name, presented]) =>
          `Host key not trusted yet: ${name} presents ${presented}. ` +
          "Someone who may edit the connection must check and accept it before anyone connects.",
      ],
    ],
    plain: (text) => withDetail("The server's host key is not trusted yet", text),
  },
  auth_failed: {
    rules: [
      [
        /^(SSH|VNC|RDP|telnet)? ?authentication failed:?\s*(.*)$/i,
        ([, protocol, detail]) =>
          withDetail(`Authentication failed: the ${protocol ? `${protocol.toUpperCase()} ` : ""}server refused the connection's credentials`, detail),
      ],
    ],
    plain: (text) => withDetail("Authentication failed: the server refused the connection's credentials", text),
  },
  auth_timeout: {
    rules: [[/^authentication timeout/i, () => "No password was entered in time: the server stopped waiting."]],
    // "Expected an auth message": the client sent something else first
    plain: (text) => sentence(text) || "No password was entered in time: the server stopped waiting.",
  },
  network_policy: {
    rules: [
      [
        /network policy does not allow connecting to (.+?): (.+)$/i,
        ([, target, why]) => `Refused by the gateway's network policy: connecting to ${target} is not allowed (${why.replace(/\.$/, "")}).`,
      ],
    ],
    plain: (text) => withDetail("Refused by the gateway's network policy", text),
  },
  unreachable: {
    rules: [[/^the connection's target cannot be reached/i, () => "The server cannot be reached: it is down, or the gateway may not connect to it."]],
    plain: (text) => withDetail("The server cannot be reached", text),
  },
  connection_lost: {
    // "Connection lost: SSH connection lost: Connection lost" says one thing three times
    rules: [[/^(?:(?:SSH )?connection lost\b:?\s*)+(.*)$/i, ([, detail]) => withDetail("The connection to the server was lost", detail)]],
    plain: (text) => withDetail("The connection to the server was lost", text),
  },
  shell_closed: {
    rules: [[/^shell closed$/i, () => "The server closed the connection (the shell ended)."]],
    plain: () => "The server closed the connection (the shell ended).",
  },
  connection_closed: {
    rules: [[/^connection closed$/i, () => "The server closed the connection."]],
    plain: () => "The server closed the connection.",
  },
  shutting_down: {
    rules: [[/^server shutting down/i, () => CODES[1001]]],
    plain: () => CODES[1001],
  },
  no_moderator: {
    rules: [[/^no moderator joined/i, () => "The session ended: no moderator was there for the grace period."]],
    plain: () => "The session ended: no moderator was there for the grace period.",
  },
  opened_elsewhere: {
    rules: [[/^session opened in another window/i, () => "This session was opened in another window or tab."]],
    plain: () => "This session was opened in another window or tab.",
  },
  revoked: {
    rules: [[/^session has been revoked/i, () => "Signed out: your sign-in was ended (revoked)."]],
    plain: (text) => (text ? `Signed out: your sign-in was ended (${text.replace(/\.$/, "")}).` : "Signed out: your sign-in was ended."),
  },
  ticket_invalid: {
    rules: [[/^(invalid|expired|missing)\b.*ticket/i, () => signedOutExpired]],
    plain: () => signedOutExpired,
  },
  user_deleted: {
    rules: [[/^user deleted$/i, () => "Signed out: your account was deleted."]],
    plain: () => "Signed out: your account was deleted.",
  },
  connection_deleted: {
    rules: [[/^the connection was deleted$/i, () => "The connection was deleted."]],
    plain: () => "The connection was deleted.",
  },
  not_shared: {
    rules: [[/^the connection is no longer shared with you$/i, () => "The connection is no longer shared with you."]],
    plain: () => "The connection is no longer shared with you.",
  },
  access_ended: {
    rules: [[/^your access to this connection ended$/i, () => "Your access to this connection ended (its approval expired or was withdrawn)."]],
    plain: () => "Your access to this connection ended (its approval expired or was withdrawn).",
  },
  permission_withdrawn: {
    rules: [[/^permission (\S+) was withdrawn$/i, ([, permission]) => `Your role no longer allows this connection (permission ${permission} was withdrawn).`]],
    plain: () => "Your role no longer allows this connection (a permission was withdrawn).",
  },
  not_found: {
    rules: [[/^connection not found$/i, () => notFound]],
    plain: (text) => sentence(text) || notFound,
  },
  // codes whose words are the server's alone (no text rule: an older server's text reads as a sentence)
  session_limit: {
    rules: [],
    plain: (text) => (text ? `Too many sessions are open: ${sentence(text)} Close one and try again.` : CODES[4008]),
  },
  terminated: { rules: [], plain: (text) => sentence(text) || "An administrator ended the session." },
  restoring: { rules: [], plain: () => "The gateway is being restored from a backup. Reconnect in a moment." },
  unavailable: { rules: [], plain: () => CODES[1013] },
  session_ended: { rules: [], plain: () => "The watched session ended." },
  recording_missing: {
    rules: [
      [
        /^recording required: no recording upload for ([\d.]+) s/i,
        ([, seconds]) => `Recording required: this desktop's recording stopped reaching the gateway for ${seconds} s, so the session was ended.`,
      ],
    ],
    plain: () => "Recording required: this desktop's recording stopped reaching the gateway, so the session was ended.",
  },
  forbidden: { rules: [], plain: (text) => sentence(text) || "You may not open this connection." },
  bad_request: { rules: [], plain: (text) => sentence(text) || "The gateway refused the request." },
  remote_error: { rules: [], plain: (text) => sentence(text) || "The server refused or failed the connection." },
};

const RULES: Rule[] = Object.values(REASONS).flatMap((reason) => reason.rules);

/** The first rule that reads `text`, or "". */
function byRules(rules: Rule[], text: string): string {
  for (const [pattern, say] of rules) {
    const found = text.match(pattern);
    if (found) return say(found);
  }
  return "";
}

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
 * text, where the close reason may be cut at 123 bytes), `reason` the close frame's,
 * `reasonCode` the error frame's stable `reason` code. The code decides what is said, the
 * text only adds its detail; without a code (an older server) the text is matched.
 * 4001 (signed out) always reads "Signed out: ...".
 */
export function closeReason(code: number, reason: string, lastError: string, reasonCode = ""): string {
  const text = (lastError || reason).trim();
  const known = Object.hasOwn(REASONS, reasonCode) ? REASONS[reasonCode] : undefined;
  let said = known ? byRules(known.rules, text) || known.plain(text) : byRules(RULES, text);
  if (!said && code === 4008 && text) said = REASONS.session_limit.plain(text);
  if (!said) said = sentence(text) || CODES[code] || `The session ended (code ${code}).`;
  if (isSignedOut(code) && !said.startsWith("Signed out")) said = `Signed out: ${said}`;
  return said;
}

/**
 * The stable reason code a desktop relay's close stands for, where it matters to the tab:
 * `access_ended` when an approved access ran out or was withdrawn (4003 with the server's
 * words; the relays send no error frame with a code), else "".
 */
export function desktopCloseReason(code: number, reason: string): string {
  return code === 4003 && /^your access to (this connection|the jump host .+) ended$/i.test(reason.trim()) ? "access_ended" : "";
}
