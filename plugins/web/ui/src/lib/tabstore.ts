// The open tabs as this browser tab keeps them across a reload (sessionStorage) and as the
// window holding them shares them with a window that takes them over (localStorage), and the
// names the tab strip shows. Pure, so Vitest checks them; tabs.svelte.ts reads and writes.
//
// Nothing secret is kept: a terminal's `sessionId` is the client-chosen id the gateway
// re-attaches by, and it does so only for the same user in the same sign-in (cookie) and
// connection (docs/terminals.md, "Re-attaching"); the id alone opens nothing.

/** One open tab as kept in storage. */
export interface StoredTab {
  key: string;
  connectionId: string;
  name: string;
  protocol: string;
  /** A remote desktop (VNC, RDP); a terminal otherwise. */
  kind?: "desktop";
  /** The terminal's re-attach id (the socket's `sessionId`). */
  sessionId?: string;
  /** A terminal's file panel, open at this folder ("" its start folder); absent when closed. */
  files?: string;
  /** The tab had ended before the reload: it comes back ended, with its Reconnect, not as a new shell. */
  ended?: boolean;
}

/** What is kept: whose tabs these are, the last key number, the tabs, the split pair. */
export interface StoredTabs {
  user: string;
  counter: number;
  list: StoredTab[];
  split: [string, string] | null;
}

export const TABS_KEY = "hostgate.tabs";
/** localStorage: the tabs as the window that holds them keeps them, for a window that takes them over. */
export const WORKSPACE_KEY = "hostgate.workspace";
/** localStorage: the id of the page that holds the tabs ("" or absent: no open window does). */
export const HOLDER_KEY = "hostgate.workspace.holder";
/** sessionStorage: this browser tab's tabs were taken over by another window (the user's id). */
export const MOVED_KEY = "hostgate.tabs.moved";

/** What a tab that had ended before the reload says beside its Reconnect. */
export const ENDED_BEFORE_RELOAD = "it had ended before the page was reloaded.";

const MAX_TABS = 50;

function text(value: unknown, max = 200): string | null {
  return typeof value === "string" && value.length > 0 && value.length <= max ? value : null;
}

function tabFrom(value: unknown): StoredTab | null {
  if (!value || typeof value !== "object") return null;
  const raw = value as Record<string, unknown>;
  const key = text(raw.key, 20);
  const connectionId = text(raw.connectionId);
  const name = text(raw.name);
  const protocol = text(raw.protocol, 40);
  if (!key || !/^[td]\d+$/.test(key) || !connectionId || !name || !protocol) return null;
  const tab: StoredTab = { key, connectionId, name, protocol };
  if (raw.kind === "desktop") tab.kind = "desktop";
  const sessionId = text(raw.sessionId, 128);
  if (sessionId) tab.sessionId = sessionId;
  if (typeof raw.files === "string" && raw.files.length <= 4096) tab.files = raw.files;
  if (raw.ended === true) tab.ended = true;
  return tab;
}

/**
 * The tabs kept for `user` in `raw` (sessionStorage's text), or null: nothing kept,
 * unreadable, or another user's (a different sign-in in this browser tab starts empty).
 */
export function parseStoredTabs(raw: string | null, user: string): StoredTabs | null {
  if (!raw) return null;
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return null;
  }
  if (!value || typeof value !== "object") return null;
  const stored = value as Record<string, unknown>;
  if (stored.user !== user || !Array.isArray(stored.list)) return null;
  const list: StoredTab[] = [];
  for (const item of stored.list.slice(0, MAX_TABS)) {
    const tab = tabFrom(item);
    if (tab && !list.some((other) => other.key === tab.key)) list.push(tab);
  }
  const highest = Math.max(0, ...list.map((tab) => Number(tab.key.slice(1))));
  const counter = typeof stored.counter === "number" && Number.isSafeInteger(stored.counter) ? Math.max(stored.counter, highest) : highest;
  const pair = stored.split;
  const split =
    Array.isArray(pair) && pair.length === 2 && pair.every((key) => list.some((tab) => tab.key === key && tab.kind !== "desktop"))
      ? ([pair[0], pair[1]] as [string, string])
      : null;
  return { user, counter, list, split };
}

/** The storage text for `tabs` (only the fields above: nothing else a tab carries at run time). */
export function storedTabsText(tabs: StoredTabs): string {
  const list = tabs.list.map((tab) => tabFrom(tab)).filter((tab): tab is StoredTab => tab !== null);
  return JSON.stringify({ user: tabs.user, counter: tabs.counter, list, split: tabs.split });
}

/**
 * The tab strip's names: a connection opened twice reads "prod-db", "prod-db (2)" in the
 * order the tabs were opened; a name that is unique stays as it is.
 */
export function tabLabels(list: readonly { key: string; name: string }[]): Map<string, string> {
  const seen = new Map<string, number>();
  const labels = new Map<string, string>();
  for (const tab of list) {
    const count = (seen.get(tab.name) ?? 0) + 1;
    seen.set(tab.name, count);
    labels.set(tab.key, count === 1 ? tab.name : `${tab.name} (${count})`);
  }
  return labels;
}

/**
 * How long to wait before a dropped terminal socket tries to re-attach on its own (ms), or
 * null: do not. Only a socket that went away without a close from the gateway (1006: the
 * network dropped, the laptop slept) is retried, a few times, well inside the gateway's
 * re-attach grace (120 s for SSH), also while the network is still down (code 0: no
 * socket could be opened, during a retry); every other close is the server's decision (the shell
 * ended, access was revoked, the session moved to another window) and waits for Reconnect.
 */
export function reattachDelay(code: number, attempt: number): number | null {
  // 0: no socket at all (the ticket request failed): the network is still down during a retry
  const dropped = code === 1006 || (code === 0 && attempt > 0);
  if (!dropped || attempt >= 5) return null;
  return 1000 * 2 ** attempt;
}
