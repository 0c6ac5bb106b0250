// Command rules (Administration → Command rules): the form's state, the request body and
// the sentence each rule reads as; pure, so Vitest checks them.
import type { components } from "../../../api/schema";

export type CommandRule = components["schemas"]["RuleJson"];
export type TestResult = components["schemas"]["TestResult"];
export type HeldCommand = components["schemas"]["HeldJson"];

export type RuleAction = "block" | "approve" | "alert";
export type RuleMatch = "exact" | "prefix" | "glob" | "regex";

export const ACTIONS: readonly (readonly [RuleAction, string])[] = [
  ["block", "Block: never sent"],
  ["approve", "Approve: held until an approver allows it"],
  ["alert", "Alert: sent, and flagged in the audit log"],
];

export const MATCHES: readonly (readonly [RuleMatch, string])[] = [
  ["prefix", "Starts with"],
  ["exact", "Is exactly"],
  ["glob", "Matches the wildcard pattern"],
  ["regex", "Contains the regular expression"],
];

export interface RuleForm {
  name: string;
  description: string;
  enabled: boolean;
  action: RuleAction;
  match: RuleMatch;
  pattern: string;
  priority: number;
  connectionIds: string[];
  groupIds: string[];
  /** Tags, separated by commas. */
  tags: string;
  roleIds: string[];
}

/** A new rule's form: a prefix block rule for every connection and role. */
export function emptyRule(): RuleForm {
  return { name: "", description: "", enabled: true, action: "block", match: "prefix", pattern: "", priority: 100, connectionIds: [], groupIds: [], tags: "", roleIds: [] };
}

/** The form for editing `rule`. */
export function ruleForm(rule: CommandRule): RuleForm {
  return {
    name: rule.name,
    description: rule.description,
    enabled: rule.enabled,
    action: rule.action as RuleAction,
    match: rule.match as RuleMatch,
    pattern: rule.pattern,
    priority: rule.priority,
    connectionIds: [...rule.connectionIds],
    groupIds: [...rule.groupIds],
    tags: rule.tags.join(", "),
    roleIds: [...rule.roleIds],
  };
}

/** The body of POST /command-rules or PUT /command-rules/:id (the whole rule either way). */
export function ruleBody(form: RuleForm) {
  return {
    name: form.name.trim(),
    description: form.description.trim(),
    enabled: form.enabled,
    action: form.action,
    match: form.match,
    pattern: form.pattern,
    priority: Math.trunc(Number(form.priority)),
    connectionIds: form.connectionIds,
    groupIds: form.groupIds,
    tags: [...new Set(form.tags.split(",").map((t) => t.trim()).filter(Boolean))],
    roleIds: form.roleIds,
  };
}

/** Names for the ids a rule's scope holds; an id no longer known shows as itself. */
export interface ScopeNames {
  connections: Map<string, string>;
  groups: Map<string, string>;
  roles: Map<string, string>;
}

const VERBS: Record<string, string> = { block: "Blocks", approve: "Holds for approval", alert: "Flags" };
const MATCH_WORDS: Record<string, string> = { exact: "the line", prefix: "lines starting with", glob: "lines matching", regex: "lines containing /" };

/** What a rule does in one sentence: "Blocks lines starting with rm -rf on every connection, for everyone." */
export function describeRule(rule: CommandRule, names: ScopeNames): string {
  const verb = VERBS[rule.action] ?? rule.action;
  const what = rule.match === "regex" ? `lines containing /${rule.pattern}/` : `${MATCH_WORDS[rule.match] ?? rule.match} ${rule.pattern}`;
  const name = (map: Map<string, string>, id: string) => map.get(id) ?? id;
  const places = [
    ...rule.connectionIds.map((id) => name(names.connections, id)),
    ...rule.groupIds.map((id) => `the group ${name(names.groups, id)}`),
    ...rule.tags.map((tag) => `tag ${tag}`),
  ];
  const where = places.length ? `on ${places.join(", ")}` : "on every connection";
  const who = rule.roleIds.length ? `for ${rule.roleIds.map((id) => name(names.roles, id)).join(", ")}` : "for everyone";
  return `${verb} ${what} ${where}, ${who}.`;
}

/** The answer of POST /command-rules/test in words. */
export function describeTest(result: TestResult): string {
  if (result.action === "allow" || !result.rule) return "Allowed: no enabled rule matches this command.";
  const line = result.line ? ` (the line ${result.line})` : "";
  const outcome: Record<string, string> = {
    block: "Blocked: it would never be sent",
    approve: "Held for approval: it would wait for an approver",
    alert: "Allowed and flagged in the audit log",
  };
  return `${outcome[result.action] ?? result.action} — rule ${result.rule.name}${line}.`;
}

/** Every group of a connection tree, flattened, with its path ("Prod / Web"). */
export function flattenGroups(groups: readonly { id: string; name: string; children: readonly unknown[] }[], prefix = ""): { id: string; name: string }[] {
  return groups.flatMap((group) => {
    const name = prefix ? `${prefix} / ${group.name}` : group.name;
    const children = group.children as { id: string; name: string; children: readonly unknown[] }[];
    return [{ id: group.id, name }, ...flattenGroups(children, name)];
  });
}
