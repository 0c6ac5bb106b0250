// The command palette's entries and search (pure, for Vitest): jump to a connection, open
// its terminal or its files, go to a page, pick a theme.
import type { ConnectionSummary, Protocol } from "../api/types";
import { visibleSections } from "../screens/admin/sections";
import { approvesCommands } from "./heldcommands";
import { fileProtocolFor } from "./files";
import type { ThemeChoice } from "./themechoice";

export type PaletteAction =
  | { type: "navigate"; path: string }
  | { type: "terminal"; connection: ConnectionSummary }
  | { type: "theme"; choice: ThemeChoice }
  | { type: "signout" };

export interface PaletteEntry {
  /** Unique, stable: the option's DOM id is made from it. */
  id: string;
  /** What the option says ("Open terminal: web-1"). */
  label: string;
  /** Quieter detail (host, protocol). */
  hint: string;
  action: PaletteAction;
}

const PAGES: PaletteEntry[] = [
  { id: "page-home", label: "Start page", hint: "", action: { type: "navigate", path: "/" } },
  { id: "page-profile", label: "Your profile", hint: "account, password, sessions", action: { type: "navigate", path: "/profile" } },
  { id: "page-new", label: "New connection", hint: "", action: { type: "navigate", path: "/connections/new" } },
  { id: "page-sessions", label: "Session history", hint: "recordings, playback", action: { type: "navigate", path: "/sessions" } },
];

/** The pages only some people may open: the administration sections and the approvers' list. */
function permittedPages(permissions: readonly string[]): PaletteEntry[] {
  const pages: PaletteEntry[] = visibleSections(permissions).map((section) => ({
    id: `admin-${section.slug}`,
    label: section.title,
    hint: "Administration",
    action: { type: "navigate", path: `/admin/${section.slug}` },
  }));
  if (permissions.includes("access.approve")) {
    pages.push({ id: "page-access-requests", label: "Access requests", hint: "approve, deny, end", action: { type: "navigate", path: "/access-requests" } });
  }
  if (approvesCommands(permissions)) {
    pages.push({ id: "page-held-commands", label: "Held commands", hint: "approve, deny", action: { type: "navigate", path: "/held-commands" } });
  }
  return pages;
}

const THEME_ENTRIES: PaletteEntry[] = (["system", "light", "dark"] as const).map((choice) => ({
  id: `theme-${choice}`,
  label: `Theme: ${choice === "system" ? "follow the system" : choice}`,
  hint: "",
  action: { type: "theme", choice },
}));

/**
 * Every entry: per connection (go to it, its terminal, its files), the pages (the
 * administration screens `permissions` opens among them), the themes.
 */
export function buildEntries(connections: ConnectionSummary[], protocols: Protocol[], permissions: readonly string[] = []): PaletteEntry[] {
  const entries: PaletteEntry[] = [];
  for (const connection of connections) {
    const where = `${connection.protocol} · ${connection.host}`;
    const path = `/connections/${encodeURIComponent(connection.id)}`;
    entries.push({ id: `go-${connection.id}`, label: connection.name, hint: where, action: { type: "navigate", path } });
    const protocol = protocols.find((p) => p.name === connection.protocol);
    if (protocol?.terminal && protocol.canUse) {
      entries.push({ id: `term-${connection.id}`, label: `Open terminal: ${connection.name}`, hint: where, action: { type: "terminal", connection } });
    }
    const files = fileProtocolFor(connection.protocol, protocols);
    if (files && protocols.find((p) => p.name === files)?.canUse) {
      entries.push({ id: `files-${connection.id}`, label: `Browse files: ${connection.name}`, hint: where, action: { type: "navigate", path: `${path}/files` } });
    }
  }
  return [...entries, ...PAGES, ...permittedPages(permissions), ...THEME_ENTRIES, { id: "signout", label: "Sign out", hint: "", action: { type: "signout" } }];
}

/**
 * The entries matching `query` (every word somewhere in the label or hint, any case),
 * best first: label starting with the query, then a word of the label starting with it,
 * then the rest in their order. An empty query gives the pages and themes first.
 */
export function searchEntries(entries: PaletteEntry[], query: string, limit = 50): PaletteEntry[] {
  const q = query.trim().toLowerCase();
  if (!q) {
    const fixed = entries.filter((e) => e.action.type !== "terminal" && !e.id.startsWith("go-") && !e.id.startsWith("files-"));
    const rest = entries.filter((e) => !fixed.includes(e));
    return [...fixed, ...rest].slice(0, limit);
  }
  const words = q.split(/\s+/);
  const scored: { entry: PaletteEntry; score: number; index: number }[] = [];
  entries.forEach((entry, index) => {
    const label = entry.label.toLowerCase();
    const text = `${label} ${entry.hint.toLowerCase()}`;
    if (!words.every((w) => text.includes(w))) return;
    let score = 2;
    if (label.startsWith(q)) score = 0;
    else if (label.split(/[\s:·]+/).some((part) => part.startsWith(words[0]))) score = 1;
    scored.push({ entry, score, index });
  });
  scored.sort((a, b) => a.score - b.score || a.index - b.index);
  return scored.slice(0, limit).map((s) => s.entry);
}
