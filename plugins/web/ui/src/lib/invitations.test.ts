import { describe, expect, it } from "vitest";
import { type Invitation, invitationText, joinPath, offered } from "./invitations";

function invitation(fields: Partial<Invitation>): Invitation {
  return {
    id: "i1",
    sessionId: "s1",
    ownerId: "u-alice",
    ownerUsername: "alice",
    userId: "u-bob",
    username: "bob",
    mode: "participant",
    connectionName: "lab-ssh",
    protocol: "ssh",
    createdAt: "2026-01-01T00:00:00Z",
    expiresAt: "2026-01-01T00:30:00Z",
    ...fields,
  };
}

describe("session invitations", () => {
  it("offers the invitations made to this user, not those they made or dismissed", () => {
    const mine = invitation({ id: "a" });
    const sent = invitation({ id: "b", ownerId: "u-bob", ownerUsername: "bob", userId: "u-carol" });
    const dismissed = invitation({ id: "c" });
    expect(offered([mine, sent, dismissed], "u-bob", new Set(["c"]))).toEqual([mine]);
    expect(offered([mine], "u-carol", new Set())).toEqual([]);
  });

  it("joins in the mode the owner invited to", () => {
    expect(joinPath(invitation({ sessionId: "s 1" }))).toBe("/sessions/s%201/join/participant");
    expect(joinPath(invitation({ mode: "observer" }))).toBe("/sessions/s1/join/observer");
    expect(joinPath(invitation({ mode: "driver" }))).toBe("/sessions/s1/join/observer");
  });

  it("says who invites, to what and how", () => {
    expect(invitationText(invitation({}))).toBe(
      "alice invites you to join their SSH session on lab-ssh as a participant (you may type).",
    );
    expect(invitationText(invitation({ mode: "observer", protocol: "telnet" }))).toContain(
      "TELNET session on lab-ssh as an observer (read only)",
    );
  });
});
