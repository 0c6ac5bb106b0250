import { describe, expect, it } from "vitest";
import type { ConnectionListing, ConnectionSummary, GroupNode } from "../api/types";
import { collectTags, countConnections, filterGroups, matches } from "./tree";

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
