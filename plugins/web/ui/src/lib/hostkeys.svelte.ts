// Host-key trust before a session: the server's key is scanned first (POST
// /connections/:id/host-key/scan); a new or changed key is put to the person
// (HostKeyPrompt, in the shell) and the terminal or file session waits for the answer.
// Every way a session starts asks here: opening a terminal or the files, and a tab's
// Reconnect (the key may have been forgotten or replaced since the tab opened).
import { api, call } from "../api/client";
import type { Connection, HostKeyScan } from "../api/types";
import { loadProtocols } from "./connections.svelte";
import { navigate } from "./router.svelte";
import { openTerminal } from "./tabs.svelte";

export interface HostKeyTarget {
  id: string;
  name: string;
  protocol: string;
  /** The address shown in the question; read from the connection when not given (a tab knows only its id). */
  host?: string;
  port?: number;
}

export interface HostKeyQuestion {
  connection: HostKeyTarget;
  scan: HostKeyScan;
  /** true: go on (the key was accepted, or will be trusted on first use); false: stop. */
  answer: (proceed: boolean) => void;
}

export const hostKeyPrompt = $state({
  question: null as HostKeyQuestion | null,
  /** Goes up whenever a scan or an answer may have changed what the gateway remembers. */
  changes: 0,
});

/**
 * Resolve true when a session to `connection` may start: its protocol checks no host
 * key, the key is the trusted one, or the person said yes to the new or changed key.
 * A scan that fails (unreachable, not allowed) also resolves true: the session then
 * says what is wrong where it always does.
 */
export async function confirmHostKey(connection: HostKeyTarget): Promise<boolean> {
  let scan: HostKeyScan;
  try {
    const protocols = await loadProtocols();
    if (!protocols.find((p) => p.name === connection.protocol)?.hostKeys) return true;
    scan = await call<HostKeyScan>(
      api.POST("/api/v1/connections/{connection_id}/host-key/scan", { params: { path: { connection_id: connection.id } } }),
    );
  } catch {
    return true;
  }
  hostKeyPrompt.changes += 1;
  if (scan.state === "trusted") return true;
  if (connection.host === undefined) {
    try {
      const found = await call<Connection>(
        api.GET("/api/v1/connections/{connection_id}", { params: { path: { connection_id: connection.id } } }),
      );
      connection = { ...connection, host: found.host, port: found.port };
    } catch {
      // the question names the connection without its address
    }
  }
  hostKeyPrompt.question?.answer(false); // one question at a time
  return new Promise((resolve) => {
    hostKeyPrompt.question = {
      connection,
      scan,
      answer: (proceed) => {
        hostKeyPrompt.question = null;
        hostKeyPrompt.changes += 1;
        resolve(proceed);
      },
    };
  });
}

/** Open a terminal tab once the host key is settled, and show it. */
export async function startTerminal(connection: HostKeyTarget): Promise<void> {
  if (await confirmHostKey(connection)) navigate(`/terminals/${openTerminal(connection)}`);
}
