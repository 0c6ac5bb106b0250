// The users screen's logic without markup: search, lockout state, the role choices, invite links.
import type { RoleRecord, UserRecord } from "../types";

/** Users whose username, display name, e-mail or role contains `query` (any case). */
export function filterUsers(users: readonly UserRecord[], query: string): UserRecord[] {
  const needle = query.trim().toLowerCase();
  if (!needle) return [...users];
  return users.filter((u) =>
    [u.username, u.displayName, u.email, u.role].some((text) => (text ?? "").toLowerCase().includes(needle)),
  );
}

/** Whether the account is locked at `now` (the API sends lockedUntil only while it lasts). */
export function isLocked(user: UserRecord, now: Date = new Date()): boolean {
  if (!user.lockedUntil) return false;
  const until = new Date(user.lockedUntil).getTime();
  return Number.isNaN(until) || until > now.getTime();
}

/**
 * The roles a user can be given: every role when the caller may list them
 * (roles.manage), otherwise the built-in ones and those users already hold.
 */
export function roleChoices(roles: readonly RoleRecord[] | null, users: readonly UserRecord[]): { value: string; label: string }[] {
  if (roles) {
    return roles.map((r) => ({ value: r.name, label: r.isBuiltin ? `${r.name} (built-in)` : r.name }));
  }
  const names = new Set(["admin", "user", ...users.map((u) => u.role)]);
  return [...names].sort((a, b) => a.localeCompare(b)).map((name) => ({ value: name, label: name }));
}

/** How long a new invite link works (hours, as the API takes them). */
export const INVITE_LIFETIMES = [
  { value: "24", label: "1 day" },
  { value: "72", label: "3 days" },
  { value: "168", label: "7 days" },
  { value: "720", label: "30 days" },
];

/** The full link of an invite's path ("/invite#<secret>") on this gateway. */
export function inviteLink(path: string, origin: string = window.location.origin): string {
  return new URL(path, origin).href;
}
