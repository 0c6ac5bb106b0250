// Held commands (command rules with the approve action): who decides them, and how long
// one has left; pure, so Vitest checks it.

/** Whether `permissions` let a user approve or deny other people's held commands. */
export function approvesCommands(permissions: readonly string[]): boolean {
  return permissions.includes("access.approve") || permissions.includes("sessions.moderate");
}

/** Whole seconds left before a held command is refused (0 once past). */
export function secondsLeft(expiresAt: string, now: Date = new Date()): number {
  return Math.max(0, Math.ceil((new Date(expiresAt).getTime() - now.getTime()) / 1000));
}

/** The terminal tab's headline for a command rule's frame (docs/terminals.md). */
export function ruleHeadline(state: "blocked" | "held" | "approved" | "denied", rule: string): string {
  const named = rule ? ` (rule ${rule})` : "";
  if (state === "blocked") return `Command blocked${named}`;
  if (state === "held") return `Waiting for an approver${named}`;
  if (state === "approved") return "Command approved and sent";
  return "Command refused";
}
