import { describe, expect, it } from "vitest";
import { approvesCommands, ruleHeadline, secondsLeft } from "./heldcommands";

describe("held commands", () => {
  it("lets access approvers and moderators decide, nobody else", () => {
    expect(approvesCommands(["access.approve"])).toBe(true);
    expect(approvesCommands(["sessions.moderate"])).toBe(true);
    expect(approvesCommands(["sessions.command_rules", "users.manage"])).toBe(false);
  });

  it("counts whole seconds left, never below zero", () => {
    const now = new Date("2026-01-01T00:00:00Z");
    expect(secondsLeft("2026-01-01T00:01:59.500Z", now)).toBe(120);
    expect(secondsLeft("2025-12-31T23:59:00Z", now)).toBe(0);
  });

  it("heads each state of a command rule frame", () => {
    expect(ruleHeadline("blocked", "no rm")).toBe("Command blocked (rule no rm)");
    expect(ruleHeadline("held", "sudo")).toBe("Waiting for an approver (rule sudo)");
    expect(ruleHeadline("approved", "sudo")).toBe("Command approved and sent");
    expect(ruleHeadline("denied", "")).toBe("Command refused");
  });
});
