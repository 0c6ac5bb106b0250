import { describe, expect, it } from "vitest";
import type { ConnectionListing, ConnectionSummary, GroupNode } from "../api/types";
import { collectTags, countConnections, descendantIds, destinations, dropDestination, dropZone, filterGroups, findGroup, matches, parentOf, planMove, planStep } from "./tree";

function conn(name: string, host: string, tags: string[] = []): ConnectionSummary {
  return { id: name, name, protocol: "ssh", host, port: 22, username: "", tags, groupId: null, isShared: false, shared: false, sortOrder: 0 };
}

function group(name: string, connections: ConnectionSummary[], children: GroupNode[] = []): GroupNode {
  return { id: name, name, parentId: null, sortOrder: 0, children, connections };
}

const listing: ConnectionListing = {
  groups: [
    group("Lab", [conn("web-1", "10.0.0.5", ["prod"])], [group("Rack 2", [conn("db-1", "10.0.2.9", ["prod", "db"])])]),
    group("Empty", []),
  ],
  ungrouped: [conn("laptop", "192.168.1.4")],
  sharedConnections: [conn("jump", "jump.example", ["eu"])],
};

describe("matches", () => {
  it("finds by name, host or tag, ignoring case", () => {
    expect(matches(conn("Web-1", "x"), { text: "web", tags: [] })).toBe(true);
    expect(matches(conn("a", "10.0.0.5"), { text: "0.0.5", tags: [] })).toBe(true);
    expect(matches(conn("a", "b", ["prod"]), { text: "PROD", tags: [] })).toBe(true);
    expect(matches(conn("a", "b"), { text: "zzz", tags: [] })).toBe(false);
  });
  it("needs every chosen tag", () => {
    expect(matches(conn("a", "b", ["prod"]), { text: "", tags: ["prod", "db"] })).toBe(false);
    expect(matches(conn("a", "b", ["prod", "db"]), { text: "", tags: ["prod", "db"] })).toBe(true);
  });
});

describe("filterGroups", () => {
  it("keeps every group, empty ones too, without a filter", () => {
    expect(filterGroups(listing.groups, { text: "", tags: [] }).map((g) => g.name)).toEqual(["Lab", "Empty"]);
  });
  it("keeps the path down to a nested match and drops the rest", () => {
    const [lab, ...rest] = filterGroups(listing.groups, { text: "db-1", tags: [] });
    expect(rest).toEqual([]);
    expect(lab.connections).toEqual([]);
    expect(lab.children[0].connections.map((c) => c.name)).toEqual(["db-1"]);
  });
});

describe("collectTags / countConnections", () => {
  it("lists distinct tags, sorted, shared ones included", () => {
    expect(collectTags(listing)).toEqual(["db", "eu", "prod"]);
  });
  it("counts nested connections", () => {
    expect(countConnections(listing.groups[0])).toBe(2);
  });
});

describe("moving", () => {
  // Lab (web-1, web-2) > Rack 2 (db-1), Empty; ungrouped laptop, nas
  const tree: ConnectionListing = {
    groups: [
      group("Lab", [conn("web-1", "a"), conn("web-2", "b")], [group("Rack 2", [conn("db-1", "c")])]),
      group("Empty", []),
    ],
    ungrouped: [conn("laptop", "d"), conn("nas", "e")],
    sharedConnections: [conn("jump", "f")],
  };
  const c = (id: string) => ({ kind: "connection" as const, id });
  const g = (id: string) => ({ kind: "group" as const, id });

  it("finds where an item is", () => {
    expect(parentOf(tree, c("db-1"))).toBe("Rack 2");
    expect(parentOf(tree, c("laptop"))).toBeNull();
    expect(parentOf(tree, g("Rack 2"))).toBe("Lab");
    expect(parentOf(tree, g("Lab"))).toBeNull();
    expect(parentOf(tree, c("jump"))).toBeUndefined(); // shared: not mine to move
  });

  it("moves a connection into another group, before a sibling or at the end", () => {
    expect(planMove(tree, c("laptop"), { parent: "Lab", before: "web-2" })).toEqual({
      item: c("laptop"),
      parent: "Lab",
      order: [
        { id: "web-1", sortOrder: 0 },
        { id: "laptop", sortOrder: 1 },
        { id: "web-2", sortOrder: 2 },
      ],
    });
    expect(planMove(tree, c("db-1"), { parent: null, before: null })).toEqual({
      item: c("db-1"),
      parent: null,
      order: [
        { id: "laptop", sortOrder: 0 },
        { id: "nas", sortOrder: 1 },
        { id: "db-1", sortOrder: 2 },
      ],
    });
  });

  it("reorders within the same group without a parent change", () => {
    expect(planMove(tree, c("web-2"), { parent: "Lab", before: "web-1" })).toEqual({
      item: c("web-2"),
      order: [
        { id: "web-2", sortOrder: 0 },
        { id: "web-1", sortOrder: 1 },
      ],
    });
    expect(planMove(tree, c("web-1"), { parent: "Lab", before: "web-2" })).toBeNull(); // already there
    expect(planMove(tree, c("web-2"), { parent: "Lab", before: null })).toBeNull();
  });

  it("never puts a group into itself or below itself", () => {
    expect(planMove(tree, g("Lab"), { parent: "Lab", before: null })).toBeNull();
    expect(planMove(tree, g("Lab"), { parent: "Rack 2", before: null })).toBeNull();
    expect(planMove(tree, g("Rack 2"), { parent: null, before: "Lab" })).toEqual({
      item: g("Rack 2"),
      parent: null,
      order: [
        { id: "Rack 2", sortOrder: 0 },
        { id: "Lab", sortOrder: 1 },
        { id: "Empty", sortOrder: 2 },
      ],
    });
    expect(planMove(tree, g("Empty"), { parent: "Rack 2", before: null })?.parent).toBe("Rack 2");
  });

  it("refuses what is not in the own tree or unknown groups", () => {
    expect(planMove(tree, c("jump"), { parent: "Lab", before: null })).toBeNull();
    expect(planMove(tree, c("laptop"), { parent: "nowhere", before: null })).toBeNull();
  });

  it("steps up and down among siblings", () => {
    expect(planStep(tree, c("nas"), -1)?.order.map((o) => o.id)).toEqual(["nas", "laptop"]);
    expect(planStep(tree, c("nas"), 1)).toBeNull();
    expect(planStep(tree, g("Lab"), -1)).toBeNull();
    expect(planStep(tree, g("Lab"), 1)?.order).toEqual([
      { id: "Empty", sortOrder: 0 },
      { id: "Lab", sortOrder: 1 },
    ]);
  });

  it("lists destinations with paths, without a group's own subtree", () => {
    expect(destinations(tree, c("laptop")).map((d) => d.label)).toEqual([
      "Top level (no group)",
      "Lab",
      "Lab / Rack 2",
      "Empty",
    ]);
    expect(destinations(tree, g("Lab")).map((d) => d.id)).toEqual([null, "Empty"]);
    expect(findGroup(tree.groups, "Rack 2")?.name).toBe("Rack 2");
    expect([...descendantIds(findGroup(tree.groups, "Lab")!)]).toEqual(["Rack 2"]);
  });

  it("reads a drop from where on the row it lands", () => {
    expect(dropZone("connection", "group", 0.1)).toBe("into");
    expect(dropZone("group", "group", 0.1)).toBe("before");
    expect(dropZone("group", "group", 0.5)).toBe("into");
    expect(dropZone("group", "group", 0.9)).toBe("after");
    expect(dropZone("connection", "connection", 0.2)).toBe("before");
    expect(dropZone("connection", "connection", 0.7)).toBe("after");
    expect(dropZone("group", "connection", 0.5)).toBeNull();
    expect(dropDestination(tree, c("web-1"), "after")).toEqual({ parent: "Lab", before: "web-2" });
    expect(dropDestination(tree, c("web-2"), "after")).toEqual({ parent: "Lab", before: null });
    expect(dropDestination(tree, g("Lab"), "before")).toEqual({ parent: null, before: "Lab" });
    expect(dropDestination(tree, g("Lab"), "into")).toEqual({ parent: "Lab", before: null });
  });
});
