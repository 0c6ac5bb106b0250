import { describe, expect, it } from "vitest";
import { describeRule, describeTest, emptyRule, flattenGroups, ruleBody, ruleForm, type CommandRule } from "./commandrules";

const RULE: CommandRule = {
  id: "r1",
  name: "no rm",
  description: "",
  enabled: true,
  action: "block",
  match: "prefix",
  pattern: "rm -rf",
  priority: 10,
  connectionIds: ["c1"],
  groupIds: ["g1"],
  tags: ["prod"],
  roleIds: ["role-user"],
  createdAt: "2026-01-01T00:00:00Z",
  updatedAt: "2026-01-01T00:00:00Z",
};

const NAMES = {
  connections: new Map([["c1", "web-1"]]),
  groups: new Map([["g1", "Prod"]]),
  roles: new Map([["role-user", "user"]]),
};

describe("command rule form", () => {
  it("round-trips a rule through the form to the same body", () => {
    const body = ruleBody(ruleForm(RULE));
    expect(body).toEqual({
      name: "no rm", description: "", enabled: true, action: "block", match: "prefix", pattern: "rm -rf", priority: 10,
      connectionIds: ["c1"], groupIds: ["g1"], tags: ["prod"], roleIds: ["role-user"],
    });
  });

  it("trims the name, splits and dedupes tags, keeps the pattern as typed", () => {
    const form = { ...emptyRule(), name: "  x ", pattern: " ls ", tags: "a, b,,a , ", priority: 7.9 };
    const body = ruleBody(form);
    expect(body.name).toBe("x");
    expect(body.pattern).toBe(" ls ");
    expect(body.tags).toEqual(["a", "b"]);
    expect(body.priority).toBe(7);
  });
});

describe("describeRule", () => {
  it("names the scope", () => {
    expect(describeRule(RULE, NAMES)).toBe("Blocks lines starting with rm -rf on web-1, the group Prod, tag prod, for user.");
  });

  it("says every connection and everyone for an empty scope, and shows unknown ids as they are", () => {
    const open = { ...RULE, action: "approve", match: "regex", pattern: "^sudo", connectionIds: [], groupIds: [], tags: [], roleIds: [] };
    expect(describeRule(open, NAMES)).toBe("Holds for approval lines containing /^sudo/ on every connection, for everyone.");
    expect(describeRule({ ...RULE, connectionIds: ["gone"], groupIds: [], tags: [] }, NAMES)).toContain("on gone,");
  });
});

describe("describeTest", () => {
  it("says allowed without a rule", () => {
    expect(describeTest({ action: "allow", rule: null, line: null })).toMatch(/^Allowed: no enabled rule/);
  });

  it("names the rule, the outcome and the line", () => {
    const text = describeTest({ action: "block", rule: RULE, line: "rm -rf /" });
    expect(text).toBe("Blocked: it would never be sent — rule no rm (the line rm -rf /).");
    expect(describeTest({ action: "approve", rule: RULE, line: null })).toMatch(/^Held for approval.*rule no rm\.$/);
  });
});

describe("flattenGroups", () => {
  it("lists nested groups with their path", () => {
    const tree = [{ id: "a", name: "Prod", children: [{ id: "b", name: "Web", children: [] }] }, { id: "c", name: "Lab", children: [] }];
    expect(flattenGroups(tree)).toEqual([
      { id: "a", name: "Prod" },
      { id: "b", name: "Prod / Web" },
      { id: "c", name: "Lab" },
    ]);
  });
});
