// The open terminal and desktop tabs: they stay alive while the user moves around the app,
// and come back after a reload of the page (kept in sessionStorage, tabstore.ts): terminals
// re-attach to the shell the gateway keeps for them, desktops connect again.
//
// The tabs are one workspace per browser, held by one window at a time: the holder also keeps
// them in localStorage (WORKSPACE_KEY) and names itself in HOLDER_KEY. A window opened while
// another holds them takes them over (the newest window wins); the other one is told through
// the storage event, lets its tabs go (their shells stay on the gateway) and offers to take
// them back ("Open in this window"). Only a window opened at the start page or at a tab's
// address takes them; one opened at another page (a link opened in a new browser tab) leaves
// them where they are and offers them. A window that closes gives up its hold, so a browser
// started later begins with no tabs, as before.
import { randomId } from "./ids";
import { HOLDER_KEY, MOVED_KEY, parseStoredTabs, storedTabsText, TABS_KEY, WORKSPACE_KEY, type StoredTab } from "./tabstore";

export type TabState = "connecting" | "connected" | "closed";

export interface TerminalTab extends StoredTab {
  /** Where its connection stands (the tab strip marks an ended tab). */
  state?: TabState;
}

export const tabs = $state({ list: [] as TerminalTab[] });

/** Two terminal tabs shown side by side (the split view), or none. */
export const split = $state({ pair: null as [string, string] | null });

/** Whether the tabs are held by another window (`away`), and how many it has open. */
export const workspace = $state({ away: false, count: 0 });

let counter = 0;
/** Whose tabs are open (kept with them: another sign-in in this browser tab starts empty). */
let owner = "";
/** This page's id in HOLDER_KEY (new with every load: a reload or a duplicated tab claims anew). */
const windowId = randomId();

function read(storage: () => Storage, key: string): string | null {
  try {
    return storage().getItem(key);
  } catch {
    return null;
  }
}

function write(storage: () => Storage, key: string, value: string | null): void {
  try {
    if (value === null) storage().removeItem(key);
    else storage().setItem(key, value);
  } catch {
    // storage full or refused: the tabs live as long as the page
  }
}

const local = () => localStorage;
const session = () => sessionStorage;

/** Keep the open tabs for a reload, and for a window that takes them over (a browser that refuses storage just does not keep them). */
export function saveTabs(): void {
  if (!owner || workspace.away) return;
  const list = tabs.list.map((tab) => ({ ...tab, ended: tab.state === "closed" || undefined }));
  const text = storedTabsText({ user: owner, counter, list, split: split.pair });
  write(session, TABS_KEY, text);
  // only the holder speaks for the workspace (a window that lost it may not have heard yet)
  if (read(local, HOLDER_KEY) === windowId) write(local, WORKSPACE_KEY, text);
}

/** Show `stored` as this window's tabs; the tabs that had not ended connect (terminals re-attach). */
function show(stored: ReturnType<typeof parseStoredTabs>): void {
  counter = stored?.counter ?? 0;
  tabs.list = (stored?.list ?? []).map((tab) => ({ ...tab, state: tab.ended ? "closed" : "connecting" }));
  split.pair = stored?.split ?? null;
}

/** This window holds the workspace from now on (the one that held it lets go when it hears). */
function hold(): void {
  workspace.away = false;
  write(session, MOVED_KEY, null);
  write(local, HOLDER_KEY, windowId);
  saveTabs();
}

/**
 * Bring back the tabs of `user`: this browser tab's own after a reload; those another open
 * window holds when this is a new window (it takes them over); none for another user. A
 * window whose tabs were taken over stays without them until the user takes them back.
 */
export function restoreTabs(user: string): void {
  if (owner === user) return;
  owner = user;
  listen();
  if (read(session, MOVED_KEY) === user) {
    awayFrom();
    return;
  }
  const own = parseStoredTabs(read(session, TABS_KEY), user);
  // a new window: the tabs of the window that holds them now (none when no window does)
  const held = read(local, HOLDER_KEY) ? parseStoredTabs(read(local, WORKSPACE_KEY), user) : null;
  if (!own && held?.list.length && !workspacePage(window.location.pathname)) {
    // a link opened in a new browser tab (a recording, the audit log): the tabs stay put
    awayFrom();
    return;
  }
  show(own ?? held);
  hold();
}

/** Whether a new window opened at `path` takes the tabs over: the start page or a tab's address. */
function workspacePage(path: string): boolean {
  return path === "/" || path.startsWith("/terminals/") || path.startsWith("/desktops/");
}

/** Take the tabs back from the window that holds them ("Open in this window"). */
export function takeTabsBack(): void {
  if (!owner || !workspace.away) return;
  show(parseStoredTabs(read(local, WORKSPACE_KEY), owner));
  hold();
}

/** Another window took the tabs over: let them go here (their components close their sockets; the shells stay). */
function awayFrom(): void {
  workspace.away = true;
  workspace.count = parseStoredTabs(read(local, WORKSPACE_KEY), owner)?.list.length ?? 0;
  tabs.list = [];
  split.pair = null;
  write(session, TABS_KEY, null);
  write(session, MOVED_KEY, owner);
}

/**
 * A terminal here was opened again elsewhere (closed with `opened_elsewhere`): true when that
 * was another window taking the tabs over (this window has let them go), false when not.
 */
export function tabsMovedAway(): boolean {
  const holder = read(local, HOLDER_KEY);
  if (!owner || workspace.away || !holder || holder === windowId) return false;
  awayFrom();
  return true;
}

let listening = false;

function listen(): void {
  if (listening || typeof window === "undefined") return;
  listening = true;
  window.addEventListener("storage", (event) => {
    if (!owner) return;
    if (event.key === HOLDER_KEY && event.newValue && event.newValue !== windowId && !workspace.away) awayFrom();
    else if (event.key === WORKSPACE_KEY && workspace.away)
      workspace.count = parseStoredTabs(event.newValue, owner)?.list.length ?? 0;
  });
  // closing (or reloading) gives up the hold: a window opened later starts with no tabs
  window.addEventListener("pagehide", () => {
    if (read(local, HOLDER_KEY) === windowId) write(local, HOLDER_KEY, null);
  });
  // back from the page cache: hold again, unless another window took the tabs meanwhile
  window.addEventListener("pageshow", (event) => {
    if (!event.persisted || !owner || workspace.away) return;
    const holder = read(local, HOLDER_KEY);
    if (holder && holder !== windowId) awayFrom();
    else hold();
  });
}

/** Signed out: the tabs are gone, and so is what was kept of them. */
export function forgetTabs(): void {
  if (owner && read(local, HOLDER_KEY) === windowId) {
    write(local, HOLDER_KEY, null);
    write(local, WORKSPACE_KEY, null);
  }
  owner = "";
  counter = 0;
  tabs.list = [];
  split.pair = null;
  workspace.away = false;
  write(session, TABS_KEY, null);
  write(session, MOVED_KEY, null);
}

/** A tab's connection changed state: the strip shows it, and an ended tab comes back ended after a reload. */
export function setTabState(key: string, state: TabState): void {
  const tab = tabs.list.find((t) => t.key === key);
  if (!tab || tab.state === state) return;
  tab.state = state;
  saveTabs();
}

/** A terminal's file panel opened at `folder`, moved, or closed (undefined). */
export function setTabFiles(key: string, folder: string | undefined): void {
  const tab = tabs.list.find((t) => t.key === key);
  if (!tab || tab.files === folder) return;
  tab.files = folder;
  saveTabs();
}

/** Open a new terminal tab for a connection; its key (the path is /terminals/<key>). */
export function openTerminal(connection: { id: string; name: string; protocol: string }): string {
  takeTabsBack(); // a new tab joins the others: the workspace comes to this window first
  counter += 1;
  const key = `t${counter}`;
  tabs.list.push({
    key,
    connectionId: connection.id,
    name: connection.name,
    protocol: connection.protocol,
    sessionId: randomId(),
    state: "connecting",
  });
  saveTabs();
  return key;
}

/** Open a new desktop tab (VNC, RDP) for a connection; its key (the path is /desktops/<key>). */
export function openDesktop(connection: { id: string; name: string; protocol: string }): string {
  takeTabsBack();
  counter += 1;
  const key = `d${counter}`;
  tabs.list.push({ key, connectionId: connection.id, name: connection.name, protocol: connection.protocol, kind: "desktop", state: "connecting" });
  saveTabs();
  return key;
}

/** The app path of a tab. */
export function tabPath(tab: TerminalTab): string {
  return tab.kind === "desktop" ? `/desktops/${tab.key}` : `/terminals/${tab.key}`;
}

/** Protocols opened as a desktop tab. */
export const DESKTOP_PROTOCOLS = new Set(["vnc", "rdp"]);

/** Split the view: terminal tab `current` beside the terminal tab opened before it (or after). */
export function splitView(current: string): boolean {
  const terminals = tabs.list.filter((tab) => tab.kind !== "desktop");
  const index = terminals.findIndex((tab) => tab.key === current);
  if (index < 0 || terminals.length < 2) return false;
  const other = terminals[index > 0 ? index - 1 : 1];
  split.pair = [index > 0 ? other.key : current, index > 0 ? current : other.key];
  saveTabs();
  return true;
}

/** Back to one terminal at a time. */
export function singleView(): void {
  split.pair = null;
  saveTabs();
}

/** Whether tab `key` shows when the tab `current` is the one at the app's path. */
export function shown(key: string, current: string | undefined): boolean {
  if (key === current) return true;
  const pair = split.pair;
  return !!pair && !!current && pair.includes(current) && pair.includes(key);
}

/** Close a tab (its component disposes the terminal and socket). */
export function closeTab(key: string): void {
  tabs.list = tabs.list.filter((tab) => tab.key !== key);
  if (split.pair?.includes(key)) split.pair = null;
  saveTabs();
}
