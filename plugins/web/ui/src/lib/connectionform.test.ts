import { describe, expect, it } from "vitest";
import type { Connection, ProtocolField } from "../api/types";
import { emptyForm, extraRows, formFrom, toBody, validate } from "./connectionform";

const fields: ProtocolField[] = [
  { name: "passphrase", type: "string", secret: true, required: false, default: null, description: "", setFlag: "hasPassphrase" },
  { name: "retries", type: "integer", secret: false, required: false, default: null, description: "" },
  { name: "promptOnConnect", type: "boolean", secret: false, required: false, default: false, description: "" },
];

describe("toBody", () => {
  it("creates with typed pack fields and no empty secrets", () => {
    const form = { ...emptyForm("ssh", fields), name: " web ", host: "10.0.0.5", tags: "prod, , EU", password: "" };
    form.extra.retries = "3";
    expect(toBody(form, fields, true)).toEqual({
      name: "web", protocol: "ssh", host: "10.0.0.5", port: null, username: "", tags: ["prod", "EU"], groupId: null,
      extraConfig: { retries: 3, promptOnConnect: false },
    });
  });

  it("keeps untouched secrets on update, clears removed ones", () => {
    const stored = { id: "c1", name: "web", protocol: "ssh", host: "h", port: 22, username: "u", tags: [], groupId: null, extraConfig: { retries: 2 } } as unknown as Connection;
    const form = formFrom(stored, fields);
    expect(form.password).toBeUndefined();
    form.privateKey = "";
    form.extra.passphrase = "new secret";
    form.extra.retries = "";
    const body = toBody(form, fields, false);
    expect("password" in body).toBe(false);
    expect(body.privateKey).toBe("");
    expect(body.extraConfig).toEqual({ passphrase: "new secret", retries: null, promptOnConnect: false });
    // an update always says the jump host: none here, so going direct stays explicit
    expect(body.jumpHostId).toBeNull();
  });

  it("sends the jump host chosen, and none on create when none was chosen", () => {
    const form = { ...emptyForm("ssh", fields), name: "db", host: "127.0.0.1" };
    expect("jumpHostId" in toBody(form, fields, true)).toBe(false);
    form.jumpHostId = "bastion-1";
    expect(toBody(form, fields, true).jumpHostId).toBe("bastion-1");
    const stored = { id: "c2", name: "db", protocol: "ssh", host: "h", port: 22, username: "", tags: [], groupId: null, jumpHostId: "b", extraConfig: {} } as unknown as Connection;
    expect(formFrom(stored, fields).jumpHostId).toBe("b");
  });

  it("sends the approval switch when ticked, and always on update so unticking lifts the gate", () => {
    const form = { ...emptyForm("ssh", fields), name: "db", host: "127.0.0.1" };
    expect(form.approvalRequired).toBe(false);
    expect("approvalRequired" in toBody(form, fields, true)).toBe(false);
    form.approvalRequired = true;
    expect(toBody(form, fields, true).approvalRequired).toBe(true);
    const stored = { id: "c1", name: "db", protocol: "ssh", host: "h", port: 22, username: "", tags: [], groupId: null, extraConfig: {}, approvalRequired: true } as unknown as Connection;
    const editing = formFrom(stored, fields);
    expect(editing.approvalRequired).toBe(true);
    editing.approvalRequired = false;
    expect(toBody(editing, fields, false).approvalRequired).toBe(false);
  });

  it("sends the action switches when one is off, and always on update", () => {
    const form = emptyForm("sftp", fields);
    expect("actions" in toBody(form, fields, true)).toBe(false);
    form.actions.upload = false;
    expect(toBody(form, fields, true).actions).toEqual({ upload: false, download: true, delete: true, copy: true, paste: true });
    const stored = { id: "c1", name: "f", protocol: "sftp", host: "h", port: 22, username: "", tags: [], groupId: null, extraConfig: {}, actions: { upload: true, download: true, delete: false, copy: true, paste: true } } as unknown as Connection;
    const editing = formFrom(stored, fields);
    expect(editing.actions.delete).toBe(false);
    expect(toBody(editing, fields, false).actions).toEqual(stored.actions);
  });

  it("sends moderation when required, and always on update so unticking lifts it", () => {
    const form = { ...emptyForm("ssh", fields), name: "db", host: "127.0.0.1" };
    expect("moderation" in toBody(form, fields, true)).toBe(false);
    form.moderationRequired = true;
    expect(toBody(form, fields, true).moderation).toBe("required");
    const stored = { id: "c1", name: "db", protocol: "ssh", host: "h", port: 22, username: "", tags: [], groupId: null, extraConfig: {}, moderation: "required" } as unknown as Connection;
    const editing = formFrom(stored, fields);
    expect(editing.moderationRequired).toBe(true);
    editing.moderationRequired = false;
    expect(toBody(editing, fields, false).moderation).toBe("none");
  });
});

describe("validate", () => {
  it("names the fields that are wrong", () => {
    const form = { ...emptyForm("ssh", fields), port: "99999" };
    form.extra.retries = "two";
    expect(Object.keys(validate(form, fields, true)).sort()).toEqual(["host", "name", "port", "retries"]);
  });
});

describe("extraRows", () => {
  it("labels pack fields for people: the pack's words, else the name in words; switches as yes/no", () => {
    const withWords: ProtocolField[] = [{ name: "promptOnConnect", type: "boolean", secret: false, required: false, default: false, description: "Ask before connecting" }];
    expect(extraRows({ promptOnConnect: false }, withWords)).toEqual([{ label: "Ask before connecting", value: "No" }]);
    expect(extraRows({ promptOnConnect: true, retries: 3, domain: "" }, [])).toEqual([
      { label: "Prompt on connect", value: "Yes" },
      { label: "Retries", value: "3" },
      { label: "Domain", value: "—" },
    ]);
  });
});
