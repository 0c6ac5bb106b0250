// Every failure becomes one ApiError, and every ApiError a sentence a person understands.
import { plainOsErrors } from "./oserror";

/** A failed API call: the HTTP status, the error shape's code and message, Retry-After. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly retryAfter: number | null;

  constructor(status: number, code: string, message: string, retryAfter: number | null = null) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }

  /** Build from a response and its parsed body (the gateway's `{error, code}` shape). */
  static from(response: Response, body: unknown): ApiError {
    const shape = (body && typeof body === "object" ? body : {}) as { error?: unknown; code?: unknown };
    const header = response.headers.get("Retry-After");
    const seconds = header !== null && /^\d+$/.test(header.trim()) ? Number(header) : null;
    return new ApiError(
      response.status,
      typeof shape.code === "string" ? shape.code : `http_${response.status}`,
      typeof shape.error === "string" ? shape.error : response.statusText || "Request failed",
      seconds,
    );
  }

  /** The browser could not reach the gateway at all. */
  static network(): ApiError {
    return new ApiError(0, "network", "Network error");
  }
}

/** Codes meaning "your session is gone": the app returns to sign-in. */
export const SESSION_ENDED = new Set([
  "not_authenticated",
  "invalid_token",
  "token_expired",
  "session_revoked",
  "session_expired",
  "session_idle_timeout",
]);

/** "45 seconds", "2 minutes", "1 hour 5 minutes". */
export function formatWait(seconds: number): string {
  const s = Math.max(1, Math.ceil(seconds));
  if (s < 60) return `${s} second${s === 1 ? "" : "s"}`;
  const minutes = Math.ceil(s / 60);
  if (minutes < 60) return `${minutes} minute${minutes === 1 ? "" : "s"}`;
  const hours = Math.floor(minutes / 60);
  const rest = minutes % 60;
  const h = `${hours} hour${hours === 1 ? "" : "s"}`;
  return rest ? `${h} ${rest} minute${rest === 1 ? "" : "s"}` : h;
}

/** The local clock time `seconds` from `now`, as "14:05". */
export function clockTime(seconds: number, now: Date = new Date()): string {
  const at = new Date(now.getTime() + seconds * 1000);
  return at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

/** The sentence shown next to the control that caused `error`. */
export function describeError(error: unknown, now: Date = new Date()): string {
  if (!(error instanceof ApiError)) {
    return "Something went wrong in the app. Reload the page and try again.";
  }
  switch (error.code) {
    case "network":
      return "Cannot reach the gateway. Check your connection and try again.";
    case "invalid_credentials":
      return "Wrong username or password.";
    case "account_locked":
      return error.retryAfter !== null
        ? `This account is locked after too many failed sign-ins, until ${clockTime(error.retryAfter, now)} (in ${formatWait(error.retryAfter)}). An administrator can unlock it sooner.`
        : "This account is locked after too many failed sign-ins. Try again later, or ask an administrator to unlock it.";
    case "rate_limited":
      return error.retryAfter !== null
        ? `Too many attempts. Wait ${formatWait(error.retryAfter)} and try again.`
        : "Too many attempts. Wait a moment and try again.";
    case "invalid_code":
      return "That code is not right. Enter the current code from your authenticator app.";
    case "invalid_mfa_token":
      return "The sign-in took too long. Enter your password again.";
    case "session_idle_timeout":
      return "You were signed out because the session was idle too long.";
    case "session_expired":
    case "token_expired":
      return "Your session has expired. Sign in again.";
    case "session_revoked":
      return "Your session was ended. Sign in again.";
    case "account_suspended":
      return "This account is suspended. Ask an administrator to resume it.";
    case "local_login_disabled":
      return "Password sign-in is turned off on this gateway.";
    case "wrong_password":
      return "That is not your current password.";
    case "remote_permission_denied":
      return "Permission denied: the server does not allow this for the connection's account.";
    case "already_exists":
      return "Something with that name already exists here.";
    case "directory_not_empty":
      return "That folder is not empty.";
    case "remote_not_found":
      return "It is not there any more: it was moved or deleted. Refresh the list.";
    case "remote_auth_failed":
      return "The server refused the connection's stored credentials.";
    case "remote_unreachable":
      return "The server cannot be reached right now.";
    case "remote_timeout":
      return "The server did not answer in time. Try again.";
    case "unsupported_operation":
      return "This kind of connection cannot do that.";
    case "remote_full":
      return "The server has no space left for this file.";
    case "upload_incomplete":
      return "The upload stopped before the whole file arrived; nothing was replaced.";
    case "host_key_mismatch":
      return "The server's key changed again while you were looking at it. Check it again.";
    case "host_key_edit_required":
      return "Only the connection's owner (someone who may edit it) can trust its host key. Ask them to check it.";
    case "host_key_unconfirmed":
      return "The server's host key is not trusted yet. Someone who may edit the connection must check and accept it first.";
    case "weak_password":
      return "This password is too easy to guess; the gateway refuses it. A few unrelated words make a strong one.";
    case "no_pending_host_key":
      return "There is no new host key waiting any more. Check it again.";
    case "invalid_backup_password":
      return "That password does not open this backup (or the file is damaged). Nothing was changed.";
    case "download_expired":
      return "The download link expired before it was used. Start it again.";
    case "csrf_failed":
      return "The request was refused because it did not come from this page. Reload and try again.";
    case "permission_not_held":
      return "A token can only hold permissions you have yourself.";
    case "too_many_tokens":
      return "You have 50 active tokens. Revoke one you no longer use first.";
  }
  if (error.code === "remote_error" && /no space|disk full|quota/i.test(error.message)) {
    return "The server has no space left for this file.";
  }
  if (error.status === 429) {
    return error.retryAfter !== null
      ? `Too many attempts. Wait ${formatWait(error.retryAfter)} and try again.`
      : "Too many attempts. Wait a moment and try again.";
  }
  if (error.status >= 500) {
    return "The gateway had a problem with this request. Try again; if it persists, tell an administrator.";
  }
  // the gateway's own messages are written for people ("name is required", ...); an
  // operating system's error inside one ("[Errno 111] ...") is put in words
  const text = plainOsErrors(error.message.trim());
  return text.endsWith(".") ? text : `${text}.`;
}

/**
 * Which of `fields` a validation error is about, and what to say next to it: the gateway's
 * messages name the field first ("email must be an e-mail address"), so the rest of the
 * sentence ("Must be an e-mail address.") can sit beside that field.
 */
export function fieldError<F extends string>(
  error: unknown,
  fields: readonly F[],
): { field: F; message: string } | null {
  if (!(error instanceof ApiError) || error.status !== 400) return null;
  const text = error.message.trim();
  for (const field of fields) {
    if (text.startsWith(`${field} `)) {
      const rest = text.slice(field.length + 1).trim();
      const sentence = rest.charAt(0).toUpperCase() + rest.slice(1);
      return { field, message: sentence.endsWith(".") ? sentence : `${sentence}.` };
    }
  }
  return null;
}
