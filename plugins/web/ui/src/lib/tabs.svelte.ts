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

/** Close a tab (its component disposes the terminal and socket). */
export function closeTab(key: string): void {
  tabs.list = tabs.list.filter((tab) => tab.key !== key);
}
