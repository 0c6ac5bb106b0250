import { describe, expect, it } from "vitest";
import { sectionOf, visibleSections } from "./sections";

describe("visibleSections", () => {
  it("shows nothing without an administrative permission", () => {
    expect(visibleSections(["connections.create"])).toEqual([]);
  });
  it("shows exactly the sections whose permission is held, in order", () => {
    const slugs = visibleSections(["audit.view_any", "users.manage", "settings.manage"]).map((s) => s.slug);
    expect(slugs).toEqual(["users", "tokens", "settings", "system", "audit"]);
  });
});

describe("sectionOf", () => {
  it("names the section of an admin path", () => {
    expect(sectionOf("/admin/users")).toBe("users");
    expect(sectionOf("/admin/roles/abc")).toBe("roles");
    expect(sectionOf("/admin")).toBe("");
    expect(sectionOf("/admin/")).toBe("");
  });
  it("is null outside the admin area", () => {
    expect(sectionOf("/profile")).toBeNull();
    expect(sectionOf("/administrator")).toBeNull();
  });
});
