// The sidebar's connection tree: filtering by search text and tags, collecting tags.
import type { ConnectionListing, ConnectionSummary, GroupNode } from "../api/types";

export interface Filter {
  /** Free text matched against name, host and tags (case-insensitive). */
  text: string;
  /** Tags that must all be on a connection. */
  tags: string[];
}

/** True when `connection` passes `filter`. */
export function matches(connection: ConnectionSummary, filter: Filter): boolean {
  if (!filter.tags.every((tag) => connection.tags.includes(tag))) return false;
  const needle = filter.text.trim().toLowerCase();
  if (!needle) return true;
  return (
    connection.name.toLowerCase().includes(needle) ||
    connection.host.toLowerCase().includes(needle) ||
    connection.tags.some((tag) => tag.includes(needle))
  );
}

/** True when the filter hides nothing. */
export function isEmptyFilter(filter: Filter): boolean {
  return !filter.text.trim() && filter.tags.length === 0;
}

/**
 * The groups with only the connections that pass; while filtering, groups left with
 * nothing (in them or below) are dropped. Order (sortOrder, from the API) is kept.
 */
export function filterGroups(groups: GroupNode[], filter: Filter): GroupNode[] {
  const keepEmpty = isEmptyFilter(filter);
  const out: GroupNode[] = [];
  for (const group of groups) {
    const children = filterGroups(group.children, filter);
    const connections = group.connections.filter((c) => matches(c, filter));
    if (keepEmpty || children.length || connections.length) {
      out.push({ ...group, children, connections });
    }
  }
  return out;
}

/** Every connection of the listing, own and shared, depth first. */
export function allConnections(listing: ConnectionListing): ConnectionSummary[] {
  const found: ConnectionSummary[] = [];
  const walk = (groups: GroupNode[]) => {
    for (const group of groups) {
      found.push(...group.connections);
      walk(group.children);
    }
  };
  walk(listing.groups);
  return [...found, ...listing.ungrouped, ...listing.sharedConnections];
}

/** The distinct tags in use, sorted. */
export function collectTags(listing: ConnectionListing): string[] {
  return [...new Set(allConnections(listing).flatMap((c) => c.tags))].sort();
}

/** Number of connections in a group and all its sub-groups. */
export function countConnections(group: GroupNode): number {
  return group.connections.length + group.children.reduce((n, g) => n + countConnections(g), 0);
}
