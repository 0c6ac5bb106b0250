import { describe, expect, it } from "vitest";
import type { ChannelState, Rule } from "../types";
import { SECRET_MASK, channelConfig, channelForm, fieldErrors, fieldLabel, ruleBody, ruleForm } from "./notifications";

function field(name: string, extra: Partial<ChannelState["fields"][number]> = {}): ChannelState["fields"][number] {
  return { name, type: "string", required: false, default: null, description: "", secret: false, choices: null, minimum: null, maximum: null, maxLength: null, ...extra };
}

const webhook: ChannelState = {
  id: "webhook",
  title: "Webhook",
  installed: true,
  enabled: true,
  config: { url: "https://h.example/in", method: "POST", headers: { Authorization: SECRET_MASK, "X-Team": "ops" } },
  fields: [field("url", { required: true }), field("method", { choices: ["POST", "PUT"], default: "POST" }), field("headers", { type: "map" })],
};

describe("fieldLabel", () => {
  it("spells wire names as words", () => {
    expect(fieldLabel("botToken")).toBe("Bot token");
    expect(fieldLabel("webhookUrl")).toBe("Webhook URL");
    expect(fieldLabel("chatId")).toBe("Chat ID");
    expect(fieldLabel("tls")).toBe("TLS");
  });
});

describe("channel forms", () => {
  it("round-trip a stored config, masks included", () => {
    const form = channelForm(webhook);
    expect(form.headers).toEqual([
      { name: "Authorization", value: SECRET_MASK },
      { name: "X-Team", value: "ops" },
    ]);
    expect(channelConfig(webhook, form)).toEqual(webhook.config);
  });
  it("sends a secret only when typed, leaves unset optional blanks out, types numbers", () => {
    const smtp: ChannelState = {
      id: "smtp", title: "SMTP", installed: true, enabled: false, config: {},
      fields: [field("host", { required: true }), field("port", { type: "integer", default: 587 }), field("username"), field("password", { secret: true }), field("tls", { type: "boolean", default: false })],
    };
    const form = channelForm(smtp);
    expect(form).toEqual({ host: "", port: "587", username: "", password: undefined, tls: false });
    expect(channelConfig(smtp, { ...form, host: "mail", port: "2525" })).toEqual({ host: "mail", port: 2525, tls: false });
    expect(channelConfig(smtp, { ...form, host: "mail", port: "abc", password: "pw" })).toEqual({ host: "mail", port: "abc", password: "pw", tls: false });
  });
});

describe("fieldErrors", () => {
  it("puts each sentence beside the field it names", () => {
    const { fields, rest } = fieldErrors("The smtp configuration is not valid: port must be at most 65535. from must be an address.", ["port", "from", "host"]);
    expect(fields).toEqual({ port: "Must be at most 65535.", from: "Must be an address." });
    expect(rest).toBe("");
  });
  it("keeps a message about no field whole", () => {
    expect(fieldErrors("Enabling needs a url", ["url"])).toEqual({ fields: {}, rest: "Enabling needs a url" });
  });
});

describe("rules", () => {
  const rule: Rule = {
    id: "r1", name: "New users", enabled: true, events: ["user.created"], conditionLogic: "and",
    conditions: [{ field: "ipAddress", operator: "not_in", value: ["10.0.0.0/8", "192.168.0.0/16"] }],
    cadence: "instant",
    actions: [{ channel: "smtp", recipients: ["u1", "ops@example.org"] }, { channel: "webhook", recipients: [] }],
    createdAt: "", lastTriggeredAt: null,
  };
  it("round-trip through the form", () => {
    const form = ruleForm(rule, new Set(["u1"]));
    expect(form.actions[0]).toEqual({ channel: "smtp", picked: ["u1"], others: "ops@example.org" });
    expect(form.conditions[0].values).toBe("10.0.0.0/8, 192.168.0.0/16");
    const body = ruleBody(form);
    expect(body.conditions).toEqual(rule.conditions);
    expect(body.actions).toEqual(rule.actions);
  });
});
