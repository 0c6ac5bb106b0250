// The user's terminal preferences (GET /profile/ssh-prefs: the instance defaults overlaid
// with the user's own), shared by every open terminal: when the profile saves new ones,
// `publishTerminalPrefs` updates this state and each open terminal applies them at once.
import { api, call } from "../../api/client";
import type { SshPrefs } from "../../api/types";

export const DEFAULT_PREFS: SshPrefs = {
  fontFamily: "DejaVu Sans Mono, monospace",
  fontSize: 14,
  cursorStyle: "block",
  cursorBlink: true,
  theme: "vscode-dark",
  scrollback: 1000,
};

export const terminalPrefs = $state<{ current: SshPrefs | null }>({ current: null });

let loading: Promise<SshPrefs> | null = null;

/** The preferences, fetched once per page (the defaults if the API cannot answer). */
export function loadTerminalPrefs(): Promise<SshPrefs> {
  if (terminalPrefs.current) return Promise.resolve(terminalPrefs.current);
  loading ??= call<SshPrefs>(api.GET("/api/v1/profile/ssh-prefs"))
    .catch(() => DEFAULT_PREFS)
    .then((prefs) => {
      terminalPrefs.current ??= prefs;
      return terminalPrefs.current;
    });
  return loading;
}

/** New preferences saved (or reset) in the profile: every open terminal follows. */
export function publishTerminalPrefs(prefs: SshPrefs): void {
  terminalPrefs.current = { ...prefs };
}
