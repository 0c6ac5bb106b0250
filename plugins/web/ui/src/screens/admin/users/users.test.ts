import { describe, expect, it } from "vitest";
import type { RoleRecord, UserRecord } from "../types";
import { filterUsers, inviteLink, isLocked, roleChoices } from "./users";

function user(fields: Partial<UserRecord>): UserRecord {
  return {
    id: "u1",
    username: "alice",
    displayName: "Alice Liddell",
    email: "alice@example.org",
    role: "user",
    failedLoginCount: 0,
    lockedUntil: null,
    lastLoginAt: null,
    authProvider: "local",
    suspended: false,
    mustChangePassword: false,
    ...fields,
  };
}

describe("filterUsers", () => {
  const all = [user({}), user({ id: "u2", username: "bob", displayName: "Bob", email: "", role: "auditors" })];
  it("matches username, display name, e-mail and role, any case", () => {
    expect(filterUsers(all, "LIDDELL").map((u) => u.username)).toEqual(["alice"]);
    expect(filterUsers(all, "example.org").map((u) => u.username)).toEqual(["alice"]);
    expect(filterUsers(all, "audit").map((u) => u.username)).toEqual(["bob"]);
  });
  it("returns everyone for an empty query", () => {
    expect(filterUsers(all, "  ")).toHaveLength(2);
  });
});

describe("isLocked", () => {
  const now = new Date("2026-11-25T12:00:00Z");
  it("is true only while lockedUntil is ahead", () => {
    expect(isLocked(user({ lockedUntil: "2026-11-25T12:15:00Z" }), now)).toBe(true);
    expect(isLocked(user({ lockedUntil: "2026-11-25T11:59:00Z" }), now)).toBe(false);
    expect(isLocked(user({ lockedUntil: null }), now)).toBe(false);
  });
});

describe("roleChoices", () => {
  const role = (name: string, isBuiltin: boolean): RoleRecord => ({
    id: name, name, description: "", isBuiltin, permissions: [], createdAt: "", updatedAt: "",
  });
  it("lists every role when they can be read", () => {
    expect(roleChoices([role("admin", true), role("ops", false)], [])).toEqual([
      { value: "admin", label: "admin (built-in)" },
      { value: "ops", label: "ops" },
    ]);
  });
  it("falls back to the built-in roles and the ones users hold", () => {
    expect(roleChoices(null, [user({ role: "ops" })]).map((c) => c.value)).toEqual(["admin", "ops", "user"]);
  });
});

describe("inviteLink", () => {
  it("puts the path with its fragment on this gateway's address", () => {
    expect(inviteLink("/invite#abc_DEF-123", "https://gate.example:8443")).toBe("https://gate.example:8443/invite#abc_DEF-123");
  });
});
