import { describe, expect, it } from "vitest";
import type { ConnectionSummary, Protocol } from "../api/types";
import { buildEntries, searchEntries } from "./palette";

function conn(id: string, name: string, protocol: string, host = "10.0.0.1"): ConnectionSummary {
  return { id, name, protocol, host, port: 22, username: "", tags: [], groupId: null, isShared: false, shared: false, sortOrder: 0 };
}

function proto(name: string, terminal: boolean, files: boolean, canUse = true, serves: string[] = [name]): Protocol {
  return { name, title: name, defaultPort: 22, terminal, files, stream: false, hostKeys: false, jumpHosts: false, jumpHost: false, servesConnections: serves, fields: [], canUse };
}

const protocols = [proto("ssh", true, false), proto("sftp", false, true, true, ["sftp", "ssh"]), proto("rdp", false, false), proto("telnet", true, false, false)];
const entries = buildEntries([conn("a", "web-1", "ssh"), conn("b", "desk", "rdp"), conn("c", "switch", "telnet")], protocols);

describe("buildEntries", () => {
  it("offers a terminal and files where the protocols allow and the role may use them", () => {
    const labels = entries.map((e) => e.label);
    expect(labels).toContain("Open terminal: web-1");
    expect(labels).toContain("Browse files: web-1"); // ssh connections get SFTP
    expect(labels).not.toContain("Open terminal: desk");
    expect(labels).not.toContain("Open terminal: switch"); // telnet not allowed for this role
    expect(labels).toContain("desk");
    expect(labels).toContain("Your profile");
  });
  it("finds the administration screens the person may open, and only those", () => {
    const admin = buildEntries([], protocols, ["audit.view_any", "users.manage", "access.approve"]);
    expect(searchEntries(admin, "aud")[0]).toMatchObject({ label: "Audit log", action: { type: "navigate", path: "/admin/audit" } });
    expect(admin.map((e) => e.label)).toEqual(expect.arrayContaining(["Users", "Access requests"]));
    expect(admin.map((e) => e.label)).not.toContain("Settings");
    expect(searchEntries(entries, "aud")).toEqual([]); // no permission: no admin screens
  });
  it("finds Command rules for rule writers and Held commands for approvers", () => {
    const writer = buildEntries([], protocols, ["sessions.command_rules"]);
    expect(searchEntries(writer, "command")[0]).toMatchObject({ label: "Command rules", action: { type: "navigate", path: "/admin/command-rules" } });
    expect(writer.map((e) => e.label)).not.toContain("Held commands");
    const moderator = buildEntries([], protocols, ["sessions.moderate"]);
    expect(searchEntries(moderator, "held")[0]).toMatchObject({ action: { type: "navigate", path: "/held-commands" } });
    expect(moderator.map((e) => e.label)).not.toContain("Command rules");
  });
  it("gives unique ids", () => {
    expect(new Set(entries.map((e) => e.id)).size).toBe(entries.length);
  });
});

describe("searchEntries", () => {
  it("needs every word, any case, in the label or the hint", () => {
    expect(searchEntries(entries, "TERM web").map((e) => e.label)).toEqual(["Open terminal: web-1"]);
    expect(searchEntries(entries, "rdp").map((e) => e.label)).toEqual(["desk"]);
    expect(searchEntries(entries, "nothing like it")).toEqual([]);
  });
  it("puts labels starting with the query first", () => {
    expect(searchEntries(entries, "web")[0].label).toBe("web-1");
    expect(searchEntries(entries, "prof")[0].label).toBe("Your profile");
  });
  it("starts with the pages when nothing is typed", () => {
    expect(searchEntries(entries, "")[0].label).toBe("Start page");
    expect(searchEntries(entries, "", 3)).toHaveLength(3);
  });
});
