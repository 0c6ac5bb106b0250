import { describe, expect, it } from "vitest";
import { groupTitle, ordered, permissionChanges, sortedGroups } from "./roles";

describe("groupTitle", () => {
  it("capitalises and spaces group names", () => {
    expect(groupTitle("connections")).toBe("Connections");
    expect(groupTitle("remote_desktop")).toBe("Remote desktop");
  });
});

describe("ordered", () => {
  const groups = { connections: ["connections.create", "connections.share"], users: ["users.manage"] };
  it("keeps the catalogue's order", () => {
    expect(ordered(["users.manage", "connections.share", "connections.create"], groups)).toEqual([
      "connections.create",
      "connections.share",
      "users.manage",
    ]);
  });
  it("keeps names the catalogue does not know, last", () => {
    expect(ordered(["gone.away", "users.manage"], groups)).toEqual(["users.manage", "gone.away"]);
  });
});

describe("permissionChanges", () => {
  it("lists what was added and removed", () => {
    expect(permissionChanges(["a", "b"], ["b", "c"])).toEqual({ added: ["c"], removed: ["a"] });
    expect(permissionChanges(["a"], ["a"])).toEqual({ added: [], removed: [] });
  });
});

describe("sortedGroups", () => {
  it("puts the kernel's groups first in their order, then packs' by name", () => {
    const groups = { audit: ["audit.view_any"], zeta: ["z.a"], connections: ["connections.create"], alpha: ["a.b"], users: ["users.manage"] };
    expect(sortedGroups(groups).map(([g]) => g)).toEqual(["connections", "users", "audit", "alpha", "zeta"]);
  });
});
