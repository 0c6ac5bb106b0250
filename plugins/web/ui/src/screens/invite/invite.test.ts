import { describe, expect, it } from "vitest";
import { inviteProblem, inviteSecret } from "./invite";

describe("invite links", () => {
  it("reads the secret from the fragment only when it looks like one", () => {
    const secret = "a".repeat(43);
    expect(inviteSecret(`#${secret}`)).toBe(secret);
    expect(inviteSecret("")).toBe("");
    expect(inviteSecret("#short")).toBe("");
    expect(inviteSecret("#<script>alert(1)</script>aaaaaaaaaaaaaaaa")).toBe("");
  });

  it("says which way a link ended", () => {
    expect(inviteProblem("invite_expired")?.title).toMatch(/expired/);
    expect(inviteProblem("invite_used")?.title).toMatch(/already used/);
    expect(inviteProblem("invite_revoked")?.title).toMatch(/withdrawn/);
    expect(inviteProblem("weak_password")).toBeNull();
  });
});
