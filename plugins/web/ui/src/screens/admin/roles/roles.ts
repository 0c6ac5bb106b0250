// The role editor's logic without markup: group titles, what changed, the order to store.

/** "connections" -> "Connections", "remote_desktop" -> "Remote desktop". */
export function groupTitle(group: string): string {
  const words = group.replace(/[_.-]+/g, " ").trim();
  return words ? words.charAt(0).toUpperCase() + words.slice(1) : group;
}

/** The chosen names in the catalogue's order (unknown ones last, as they came). */
export function ordered(chosen: Iterable<string>, groups: Record<string, string[]>): string[] {
  const wanted = new Set(chosen);
  const known = Object.values(groups).flat();
  const inOrder = known.filter((n) => wanted.has(n));
  const rest = [...wanted].filter((n) => !known.includes(n));
  return [...inOrder, ...rest];
}

/** Permissions added and removed going from `before` to `after`. */
export function permissionChanges(before: readonly string[], after: readonly string[]): { added: string[]; removed: string[] } {
  const was = new Set(before);
  const now = new Set(after);
  return { added: after.filter((n) => !was.has(n)), removed: before.filter((n) => !now.has(n)) };
}

/** The kernel's groups in the order the documentation lists them; packs' groups follow, by name. */
const KERNEL_GROUPS = ["connections", "sessions", "users", "roles", "audit", "settings", "system"];

/** The catalogue's groups as [name, permissions] pairs, kernel groups first. */
export function sortedGroups(groups: Record<string, string[]>): [string, string[]][] {
  const rank = (g: string) => {
    const i = KERNEL_GROUPS.indexOf(g);
    return i === -1 ? KERNEL_GROUPS.length : i;
  };
  return Object.entries(groups).sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b));
}
