// The open terminal tabs: they stay alive while the user moves around the app.

export interface TerminalTab {
  key: string;
  connectionId: string;
  name: string;
  protocol: string;
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

/** Close a tab (its component disposes the terminal and socket). */
export function closeTab(key: string): void {
  tabs.list = tabs.list.filter((tab) => tab.key !== key);
}
