// The user's terminal preferences (GET /profile/ssh-prefs: the instance defaults overlaid
// with the user's own), shared by every open terminal: when the profile saves new ones,
// `publishTerminalPrefs` updates this state and each open terminal applies them at once.
// Other tabs of this browser hear of it on a BroadcastChannel and fetch them again; a tab
// fetches them again when it gets the focus back too (a change made on another device).
import { api, call } from "../../api/client";
import type { SshPrefs } from "../../api/types";
import { session } from "../session.svelte";

export const DEFAULT_PREFS: SshPrefs = {
  fontFamily: "DejaVu Sans Mono, monospace",
  fontSize: 14,
  cursorStyle: "block",
  cursorBlink: true,
  theme: "vscode-dark",
  scrollback: 1000,
};

export const terminalPrefs = $state<{ current: SshPrefs | null }>({ current: null });

/** The channel other tabs of this browser (same origin) hear "the preferences changed" on. */
export const PREFS_CHANNEL = "hostgate-terminal-prefs";

let loading: Promise<SshPrefs> | null = null;
let channel: BroadcastChannel | null = null;
let refreshing = false;
let again = false; // a change was announced while a fetch was under way: fetch once more

/** The preferences, fetched once per page (the defaults if the API cannot answer). */
export function loadTerminalPrefs(): Promise<SshPrefs> {
  if (terminalPrefs.current) return Promise.resolve(terminalPrefs.current);
  follow();
  loading ??= call<SshPrefs>(api.GET("/api/v1/profile/ssh-prefs"))
    .catch(() => DEFAULT_PREFS)
    .then((prefs) => {
      terminalPrefs.current ??= prefs;
      return terminalPrefs.current;
    });
  return loading;
}

/** New preferences saved (or reset) in the profile: every open terminal follows, in every tab. */
export function publishTerminalPrefs(prefs: SshPrefs): void {
  terminalPrefs.current = { ...prefs };
  follow();
  channel?.postMessage("changed");
}

/** Whether two sets of preferences differ in anything a terminal shows. */
function prefsDiffer(a: SshPrefs | null, b: SshPrefs): boolean {
  if (!a) return true;
  return (Object.keys(b) as (keyof SshPrefs)[]).some((key) => a[key] !== b[key]);
}

/** Fetch the preferences again (signed in, once at a time); terminals follow what changed. */
function refresh(): void {
  if (session.phase !== "app" || !terminalPrefs.current) return;
  if (refreshing) {
    again = true;
    return;
  }
  refreshing = true;
  call<SshPrefs>(api.GET("/api/v1/profile/ssh-prefs"))
    .then((prefs) => {
      if (prefsDiffer(terminalPrefs.current, prefs)) terminalPrefs.current = prefs;
    })
    .catch(() => undefined) // the gateway is away: the terminals keep what they have
    .finally(() => {
      refreshing = false;
      if (again) {
        again = false;
        refresh();
      }
    });
}

/** Listen, once per page, for changes made in other tabs and for the focus coming back. */
function follow(): void {
  if (channel || typeof BroadcastChannel === "undefined") return;
  channel = new BroadcastChannel(PREFS_CHANNEL);
  channel.onmessage = refresh;
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") refresh();
  });
  window.addEventListener("focus", refresh);
}
