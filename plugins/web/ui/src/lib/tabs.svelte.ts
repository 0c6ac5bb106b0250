// The open terminal and desktop tabs: they stay alive while the user moves around the app,
// and come back after a reload of the page (kept in sessionStorage, tabstore.ts): terminals
// re-attach to the shell the gateway keeps for them, desktops connect again.
import { randomId } from "./ids";
import { parseStoredTabs, storedTabsText, TABS_KEY, type StoredTab } from "./tabstore";

export type TabState = "connecting" | "connected" | "closed";

export interface TerminalTab extends StoredTab {
  /** Where its connection stands (the tab strip marks an ended tab). */
  state?: TabState;
}

export const tabs = $state({ list: [] as TerminalTab[] });

/** Two terminal tabs shown side by side (the split view), or none. */
export const split = $state({ pair: null as [string, string] | null });

let counter = 0;
/** Whose tabs are open (kept with them: another sign-in in this browser tab starts empty). */
let owner = "";

/** Keep the open tabs for a reload (a browser that refuses storage just does not keep them). */
export function saveTabs(): void {
  if (!owner) return;
  const list = tabs.list.map((tab) => ({ ...tab, ended: tab.state === "closed" || undefined }));
  try {
    sessionStorage.setItem(TABS_KEY, storedTabsText({ user: owner, counter, list, split: split.pair }));
  } catch {
    // storage full or refused: the tabs live as long as the page
  }
}

/** Bring back the tabs this browser tab had open for `user` before a reload (none for another user). */
export function restoreTabs(user: string): void {
  if (owner === user) return;
  owner = user;
  let raw: string | null = null;
  try {
    raw = sessionStorage.getItem(TABS_KEY);
  } catch {
    raw = null;
  }
  const stored = parseStoredTabs(raw, user);
  counter = stored?.counter ?? 0;
  tabs.list = (stored?.list ?? []).map((tab) => ({ ...tab, state: tab.ended ? "closed" : "connecting" }));
  split.pair = stored?.split ?? null;
  saveTabs();
}

/** Signed out: the tabs are gone, and so is what was kept of them. */
export function forgetTabs(): void {
  owner = "";
  counter = 0;
  tabs.list = [];
  split.pair = null;
  try {
    sessionStorage.removeItem(TABS_KEY);
  } catch {
    // nothing was kept
  }
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
