import { describe, expect, it } from "vitest";
import type { SettingInfo } from "../types";
import { changesOf, controlOf, groupSettings, hintOf, labelOf, settingError, titleOf, wireValue, withLabels } from "./settings";

function info(fields: Partial<SettingInfo> & { key: string }): SettingInfo {
  return {
    group: fields.key.split(".")[0],
    pack: "kernel",
    type: "string",
    default: "",
    description: "",
    nullable: false,
    secret: false,
    public: false,
    readonly: false,
    minimum: null,
    maximum: null,
    choices: null,
    maxLength: 4096,
    checked: false,
    ...fields,
  };
}

describe("groupSettings", () => {
  it("puts the kernel's groups first in their order, then packs' groups by title", () => {
    const groups = groupSettings([
      info({ key: "widgets.size" }),
      info({ key: "security.max_login_attempts" }),
      info({ key: "app.name" }),
      info({ key: "auth.ldap_url", group: "auth.ldap" }),
      info({ key: "acme.token" }),
    ]);
    expect(groups.map((g) => g.title)).toEqual(["Branding", "LDAP directory", "Security", "Acme", "Widgets"]);
  });
  it("puts a group's on/off switch first", () => {
    const [ldap] = groupSettings([
      info({ key: "auth.ldap_bind_dn", group: "auth.ldap" }),
      info({ key: "auth.ldap_enabled", group: "auth.ldap", type: "boolean" }),
      info({ key: "auth.ldap_attr", group: "auth.ldap" }),
    ]);
    expect(ldap.settings.map((s) => s.key)).toEqual(["auth.ldap_enabled", "auth.ldap_attr", "auth.ldap_bind_dn"]);
  });
  it("names unknown groups from their id", () => {
    expect(titleOf("widgets.colour")).toBe("Widgets colour");
  });
  it("names the front door pack's group and its fields", () => {
    expect(titleOf("sshd")).toBe("SSH front door");
    expect(labelOf({ key: "sshd.trusted_user_ca_keys", group: "sshd" })).toBe("Trusted user CA keys");
    expect(labelOf({ key: "sshd.web_url", group: "sshd" })).toBe("Web URL");
  });
});

describe("labelOf", () => {
  it("drops the group and spells units and acronyms", () => {
    expect(labelOf({ key: "auth.ldap_bind_dn", group: "auth.ldap" })).toBe("Bind DN");
    expect(labelOf({ key: "security.lockout_duration_minutes", group: "security" })).toBe("Lockout duration (minutes)");
    expect(labelOf({ key: "recordings.max_size_mb", group: "recordings" })).toBe("Max size (MB)");
    expect(labelOf({ key: "app.name", group: "app" })).toBe("Name");
    expect(labelOf({ key: "gadgets.on", group: "widgets" })).toBe("On");
  });
});

describe("hintOf", () => {
  it("adds bounds and the default to the description", () => {
    expect(hintOf(info({ key: "a.b", type: "integer", description: "Tries", minimum: 1, maximum: 100, default: 5 }))).toBe(
      "Tries. From 1 to 100. Default: 5.",
    );
    expect(hintOf(info({ key: "a.b", type: "integer", minimum: 0, default: 0 }))).toBe("At least 0. Default: 0.");
  });
  it("names the settings a description mentions by their labels, not their keys", () => {
    const known = [info({ key: "network.allow" }), info({ key: "network.protected" }), info({ key: "updates.check_enabled" })];
    const deny = info({ key: "network.deny", description: "Never connect to these (wins over network.allow)" });
    expect(hintOf(deny, known)).toBe("Never connect to these (wins over “Allow”).");
    expect(withLabels("Take it off network.protected; see updates.check_enabled", known, "network")).toBe(
      "Take it off “Protected”; see “Check enabled” under Updates",
    );
    expect(withLabels("A file such as notes.txt stays", known, "network")).toBe("A file such as notes.txt stays");
  });
  it("never shows a secret's default", () => {
    expect(hintOf(info({ key: "a.b", secret: true, default: "x", description: "Token" }))).toBe("Token.");
  });
});

describe("controlOf", () => {
  it("picks the control from the type", () => {
    expect(controlOf(info({ key: "a.b", type: "boolean" }))).toBe("checkbox");
    expect(controlOf(info({ key: "a.b", choices: ["x", "y"] }))).toBe("select");
    expect(controlOf(info({ key: "a.b", type: "number" }))).toBe("number");
    expect(controlOf(info({ key: "a.b", secret: true }))).toBe("secret");
    expect(controlOf(info({ key: "a.b", maxLength: 100_000 }))).toBe("textarea");
    expect(controlOf(info({ key: "a.b", readonly: true, type: "boolean" }))).toBe("readonly");
    expect(controlOf(info({ key: "app.logo" }))).toBe("logo");
  });
});

describe("wireValue and changesOf", () => {
  const attempts = info({ key: "security.max_login_attempts", type: "integer" });
  const name = info({ key: "app.name" });
  const secret = info({ key: "auth.ldap_bind_password", secret: true });
  const logo = info({ key: "app.logo", nullable: true });
  it("turns typed numbers into numbers and leaves the rest for the server to refuse", () => {
    expect(wireValue(attempts, "7")).toBe(7);
    expect(wireValue(attempts, "seven")).toBe("seven");
    expect(wireValue(attempts, "")).toBe("");
  });
  it("sends only what changed, and a secret only when typed or removed", () => {
    const stored = { "security.max_login_attempts": 5, "app.name": "hostgate", "auth.ldap_bind_password": "••••••••", "app.logo": null };
    const form = { "security.max_login_attempts": "5", "app.name": "Gate", "auth.ldap_bind_password": undefined, "app.logo": null };
    expect(changesOf([attempts, name, secret, logo], stored, form)).toEqual({ "app.name": "Gate" });
    expect(changesOf([secret], stored, { "auth.ldap_bind_password": "" })).toEqual({ "auth.ldap_bind_password": "" });
    expect(changesOf([logo], stored, { "app.logo": "data:image/png;base64,AA==" })).toEqual({ "app.logo": "data:image/png;base64,AA==" });
  });
});

describe("settingError", () => {
  const keys = ["security.max_login_attempts", "network.allow", "auth.ldap_url"];
  it("finds the key the server names and keeps its reason", () => {
    expect(settingError("security.max_login_attempts must be at least 1", keys)).toEqual({
      key: "security.max_login_attempts",
      message: "Must be at least 1.",
    });
    expect(settingError("network.allow: 'x' is not a network", keys)).toEqual({ key: "network.allow", message: "'x' is not a network." });
  });
  it("is null for a message about no key", () => {
    expect(settingError("send an object of one or more setting keys", keys)).toBeNull();
  });
});
