// Changing the caller's own tree: moving and reordering connections and groups (drag and
// drop, or the row's menu), creating, renaming and deleting groups. Every change goes
// through the documented routes, then the tree is loaded again.
import { api, call } from "../api/client";
import { connections, reloadConnections } from "./connections.svelte";
import { describeError } from "./errors";
import { session } from "./session.svelte";
import { findGroup, type MovePlan, type TreeItem } from "./tree";

/** What the sidebar says about the last change (a live region), or the error. */
export const treeStatus = $state({ message: "", error: "" });

let fading: ReturnType<typeof setTimeout> | undefined;

function say(message: string): void {
  treeStatus.error = "";
  treeStatus.message = message;
  clearTimeout(fading);
  fading = setTimeout(() => (treeStatus.message = ""), 8000);
}

/** The item being dragged, and the row and zone it is over (for the drop marker). */
export const treeDrag = $state({
  item: null as TreeItem | null,
  over: null as { id: string; zone: "before" | "after" | "into" | "end" } | null,
});

/** The dialog the tree's menus open (new group, rename, delete, move to). */
export const treeDialog = $state({
  kind: null as "new-group" | "rename" | "delete" | "move" | null,
  item: null as TreeItem | null,
  /** For a new group: the group it goes in (null: top level). */
  parent: null as string | null,
});

/** May the caller move their own connections (groups are always theirs to arrange)? */
export function canMoveConnections(): boolean {
  const permissions = session.me?.permissions ?? [];
  return permissions.includes("connections.edit_own") || permissions.includes("connections.edit_any");
}

/** The name of an item of the own tree, for messages. */
export function itemName(item: TreeItem): string {
  const listing = connections.listing;
  if (!listing) return "";
  if (item.kind === "group") return findGroup(listing.groups, item.id)?.name ?? "";
  const walk = (groups: typeof listing.groups): string | undefined => {
    for (const g of groups) {
      const found = g.connections.find((c) => c.id === item.id)?.name ?? walk(g.children);
      if (found) return found;
    }
    return undefined;
  };
  return listing.ungrouped.find((c) => c.id === item.id)?.name ?? walk(listing.groups) ?? "";
}

function groupName(id: string | null): string {
  if (id === null) return "the top level";
  return connections.listing ? (findGroup(connections.listing.groups, id)?.name ?? "") : "";
}

// A change is announced once the tree shows it (and a dialog that made it has closed, in
// the same task): announced before the reload, someone acting on the message reached a
// tree still behind a modal dialog, or rows about to be redrawn.
async function changing(done: string, work: () => Promise<unknown>): Promise<boolean> {
  treeStatus.error = "";
  treeStatus.message = "";
  let changed = false;
  try {
    await work();
    changed = true;
  } catch (error) {
    treeStatus.error = describeError(error);
  }
  await reloadConnections();
  if (changed) say(done);
  return changed;
}

/** Send a move: the new parent first (when it changes), then the siblings' order. */
export function applyMove(plan: MovePlan): Promise<boolean> {
  const name = itemName(plan.item);
  const where = plan.parent !== undefined ? `Moved ${name} to ${groupName(plan.parent)}.` : `Moved ${name}.`;
  return changing(where, async () => {
    const { item } = plan;
    if (item.kind === "connection") {
      if (plan.parent !== undefined) {
        await call(api.PUT("/api/v1/connections/{connection_id}", { params: { path: { connection_id: item.id } }, body: { groupId: plan.parent } }));
      }
      await call(api.PUT("/api/v1/connections/reorder", { body: { items: plan.order } }));
    } else {
      if (plan.parent !== undefined) {
        await call(api.PUT("/api/v1/connections/groups/{group_id}", { params: { path: { group_id: item.id } }, body: { parentId: plan.parent } }));
      }
      await call(api.PUT("/api/v1/connections/groups/reorder", { body: { items: plan.order } }));
    }
  });
}

/** A new group (at the end of its parent's groups). */
export async function createGroup(name: string, parent: string | null): Promise<void> {
  await call(api.POST("/api/v1/connections/groups", { body: parent ? { name, parentId: parent } : { name } }));
  await reloadConnections();
  say(`Created the group ${name}.`);
}

/** Rename a group. */
export async function renameGroup(id: string, name: string): Promise<void> {
  await call(api.PUT("/api/v1/connections/groups/{group_id}", { params: { path: { group_id: id } }, body: { name } }));
  await reloadConnections();
  say(`Renamed the group to ${name}.`);
}

/** Delete a group; what was in it moves up to its parent. */
export function deleteGroup(id: string): Promise<boolean> {
  const name = itemName({ kind: "group", id });
  return changing(`Deleted the group ${name}; what was in it moved up one level.`, () =>
    call(api.DELETE("/api/v1/connections/groups/{group_id}", { params: { path: { group_id: id } } })),
  );
}
