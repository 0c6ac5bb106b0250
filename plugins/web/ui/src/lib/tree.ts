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

// ----- moving and reordering (drag and drop, and the "Move" menu) ----------------------

export type ItemKind = "connection" | "group";

/** A connection or a group of the caller's own tree. */
export interface TreeItem {
  kind: ItemKind;
  id: string;
}

/** Where an item goes: into `parent` (a group id; null is the top level), before `before`
 * (a sibling of the same kind) or, when `before` is null, at the end. */
export interface Destination {
  parent: string | null;
  before: string | null;
}

/** What to send: the new parent when it changes, then every sibling's new sortOrder. */
export interface MovePlan {
  item: TreeItem;
  /** The new group (connections: groupId) or parent (groups: parentId); absent when unchanged. */
  parent?: string | null;
  /** The siblings at the destination, the moved item included, numbered 0, 1, 2... */
  order: { id: string; sortOrder: number }[];
}

/** The group `id` anywhere in `groups`, or null. */
export function findGroup(groups: GroupNode[], id: string): GroupNode | null {
  for (const group of groups) {
    if (group.id === id) return group;
    const found = findGroup(group.children, id);
    if (found) return found;
  }
  return null;
}

/** Ids of a group's sub-groups, all levels down. */
export function descendantIds(group: GroupNode): Set<string> {
  const ids = new Set<string>();
  const walk = (g: GroupNode) => {
    for (const child of g.children) {
      ids.add(child.id);
      walk(child);
    }
  };
  walk(group);
  return ids;
}

/** The group an item is in (null: top level), or undefined when it is not in the own tree. */
export function parentOf(listing: ConnectionListing, item: TreeItem): string | null | undefined {
  if (item.kind === "connection") {
    if (listing.ungrouped.some((c) => c.id === item.id)) return null;
    const walk = (groups: GroupNode[]): string | undefined => {
      for (const group of groups) {
        if (group.connections.some((c) => c.id === item.id)) return group.id;
        const found = walk(group.children);
        if (found !== undefined) return found;
      }
      return undefined;
    };
    return walk(listing.groups);
  }
  if (listing.groups.some((g) => g.id === item.id)) return null;
  const walk = (groups: GroupNode[]): string | undefined => {
    for (const group of groups) {
      if (group.children.some((g) => g.id === item.id)) return group.id;
      const found = walk(group.children);
      if (found !== undefined) return found;
    }
    return undefined;
  };
  return walk(listing.groups);
}

/** The ids of the items of `kind` directly in `parent`, in their shown order. */
export function siblingIds(listing: ConnectionListing, kind: ItemKind, parent: string | null): string[] {
  if (parent === null) return (kind === "group" ? listing.groups : listing.ungrouped).map((x) => x.id);
  const group = findGroup(listing.groups, parent);
  if (!group) return [];
  return (kind === "group" ? group.children : group.connections).map((x) => x.id);
}

function numbered(ids: string[]): { id: string; sortOrder: number }[] {
  return ids.map((id, sortOrder) => ({ id, sortOrder }));
}

/**
 * The requests that put `item` at `destination`, or null when that is impossible (a
 * group into itself or below itself, an item not in the own tree, an unknown group) or
 * changes nothing.
 */
export function planMove(listing: ConnectionListing, item: TreeItem, destination: Destination): MovePlan | null {
  const from = parentOf(listing, item);
  if (from === undefined) return null;
  const { parent, before } = destination;
  if (parent !== null && !findGroup(listing.groups, parent)) return null;
  if (item.kind === "group" && parent !== null) {
    const self = findGroup(listing.groups, item.id)!;
    if (parent === item.id || descendantIds(self).has(parent)) return null;
  }
  const current = siblingIds(listing, item.kind, parent);
  const others = current.filter((id) => id !== item.id);
  const at = before === null || before === item.id ? -1 : others.indexOf(before);
  const ids = [...others];
  if (before === item.id) ids.splice(current.indexOf(item.id), 0, item.id);
  else ids.splice(at === -1 ? ids.length : at, 0, item.id);
  const moved = from !== parent;
  if (!moved && ids.join("\n") === current.join("\n")) return null;
  return moved ? { item, parent, order: numbered(ids) } : { item, order: numbered(ids) };
}

/** Move one place up (-1) or down (+1) among its siblings; null at either end. */
export function planStep(listing: ConnectionListing, item: TreeItem, step: -1 | 1): MovePlan | null {
  const parent = parentOf(listing, item);
  if (parent === undefined) return null;
  const ids = siblingIds(listing, item.kind, parent);
  const i = ids.indexOf(item.id);
  const j = i + step;
  if (i < 0 || j < 0 || j >= ids.length) return null;
  [ids[i], ids[j]] = [ids[j], ids[i]];
  return { item, order: numbered(ids) };
}

/** Where "Move to…" may put an item: the top level and every group, as "Lab / Rack 2". */
export function destinations(listing: ConnectionListing, item: TreeItem): { id: string | null; label: string }[] {
  const excluded = new Set<string>();
  if (item.kind === "group") {
    const self = findGroup(listing.groups, item.id);
    if (self) {
      excluded.add(self.id);
      for (const id of descendantIds(self)) excluded.add(id);
    }
  }
  const out: { id: string | null; label: string }[] = [{ id: null, label: "Top level (no group)" }];
  const walk = (groups: GroupNode[], path: string[]) => {
    for (const group of groups) {
      if (excluded.has(group.id)) continue;
      const here = [...path, group.name];
      out.push({ id: group.id, label: here.join(" / ") });
      walk(group.children, here);
    }
  };
  walk(listing.groups, []);
  return out;
}

export type DropZone = "before" | "after" | "into";

/**
 * Which part of a row a drag is over, from `y` (0 at the row's top, 1 at its bottom): a
 * connection goes into a group, or before/after a connection; a group goes before or after
 * a group (its top and bottom quarter) or into it; a group is never dropped on a connection.
 */
export function dropZone(dragged: ItemKind, target: ItemKind, y: number): DropZone | null {
  if (target === "group") {
    if (dragged === "connection") return "into";
    return y < 0.25 ? "before" : y > 0.75 ? "after" : "into";
  }
  if (dragged === "group") return null;
  return y < 0.5 ? "before" : "after";
}

/** The destination of a drop on `target`'s `zone`. */
export function dropDestination(listing: ConnectionListing, target: TreeItem, zone: DropZone): Destination | null {
  if (zone === "into") return { parent: target.id, before: null };
  const parent = parentOf(listing, target);
  if (parent === undefined) return null;
  if (zone === "before") return { parent, before: target.id };
  const ids = siblingIds(listing, target.kind, parent);
  return { parent, before: ids[ids.indexOf(target.id) + 1] ?? null };
}
