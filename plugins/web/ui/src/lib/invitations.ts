// Invitations to join someone's live terminal (GET /sessions/invitations, docs/terminals.md):
// which ones to offer the signed-in user, and what the offer says; pure, so Vitest checks it.
import type { components } from "../api/schema";

export type Invitation = components["schemas"]["Invitation"];

/** The invitations made to `userId` (not those they made) that were not dismissed, oldest first. */
export function offered(invitations: readonly Invitation[], userId: string, dismissed: ReadonlySet<string>): Invitation[] {
  return invitations.filter((item) => item.userId === userId && !dismissed.has(item.id));
}

/** Where "Join" goes: the join screen, in the mode the owner invited to. */
export function joinPath(invitation: Invitation): string {
  const mode = invitation.mode === "participant" ? "participant" : "observer";
  return `/sessions/${encodeURIComponent(invitation.sessionId)}/join/${mode}`;
}

/** The offer's sentence. */
export function invitationText(invitation: Invitation): string {
  const how = invitation.mode === "participant" ? "as a participant (you may type)" : "as an observer (read only)";
  return `${invitation.ownerUsername} invites you to join their ${invitation.protocol.toUpperCase()} session on ${invitation.connectionName} ${how}.`;
}
