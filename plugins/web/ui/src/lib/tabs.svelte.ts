// The open terminal and desktop tabs: they stay alive while the user moves around the app.

export interface TerminalTab {
  key: string;
  connectionId: string;
  name: string;
  protocol: string;
  /** A remote desktop (VNC, RDP) at /desktops/<key>; a terminal otherwise. */
  kind?: "desktop";
}

export const tabs = $state({ list: [] as TerminalTab[] });

let counter = 0;

/** Open a new terminal tab for a connection; its key (the path is /terminals/<key>). */
export function openTerminal(connection: { id: string; name: string; protocol: string }): string {
  counter += 1;
  const key = `t${counter}`;
  tabs.list.push({ key, connectionId: connection.id, name: connection.name, protocol: connection.protocol });
  return key;
}

/** Open a new desktop tab (VNC, RDP) for a connection; its key (the path is /desktops/<key>). */
export function openDesktop(connection: { id: string; name: string; protocol: string }): string {
  counter += 1;
  const key = `d${counter}`;
  tabs.list.push({ key, connectionId: connection.id, name: connection.name, protocol: connection.protocol, kind: "desktop" });
  return key;
}

/** The app path of a tab. */
export function tabPath(tab: TerminalTab): string {
  return tab.kind === "desktop" ? `/desktops/${tab.key}` : `/terminals/${tab.key}`;
}

/** Protocols opened as a desktop tab. */
export const DESKTOP_PROTOCOLS = new Set(["vnc", "rdp"]);

/** Two terminal tabs shown side by side (the split view), or none. */
export const split = $state({ pair: null as [string, string] | null });

/** Split the view: terminal tab `current` beside the terminal tab opened before it (or after). */
export function splitView(current: string): boolean {
  const terminals = tabs.list.filter((tab) => tab.kind !== "desktop");
  const index = terminals.findIndex((tab) => tab.key === current);
  if (index < 0 || terminals.length < 2) return false;
  const other = terminals[index > 0 ? index - 1 : 1];
  split.pair = [index > 0 ? other.key : current, index > 0 ? current : other.key];
  return true;
}

/** Back to one terminal at a time. */
export function singleView(): void {
  split.pair = null;
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
}
