import { describe, expect, it } from "vitest";
import { isMultiline, parseServerText, terminalUrl } from "./socket";

describe("terminalUrl", () => {
  it("uses wss on https and escapes the parameters", () => {
    const url = terminalUrl({ protocol: "https:", host: "gw.example:8443" }, "ssh", {
      ticket: "a+b/c", connectionId: "c 1", sessionId: "s1", cols: 80, rows: 24,
    });
    expect(url).toBe("wss://gw.example:8443/ws/ssh?ticket=a%2Bb%2Fc&connectionId=c+1&sessionId=s1&cols=80&rows=24");
  });
  it("uses ws on http", () => {
    expect(terminalUrl({ protocol: "http:", host: "h" }, "telnet", { ticket: "t", connectionId: "c", sessionId: "s", cols: 1, rows: 1 })).toMatch(/^ws:\/\/h\/ws\/telnet\?/);
  });
});

describe("server frames", () => {
  it("reads status and error frames", () => {
    expect(parseServerText('{"type":"status","message":"Connected"}')).toEqual({ kind: "status", message: "Connected" });
    expect(parseServerText('{"type":"error","message":"Host key changed"}')).toEqual({ kind: "error", message: "Host key changed", reason: "" });
    expect(parseServerText('{"type":"error","message":"Shell closed","reason":"shell_closed"}')).toEqual({
      kind: "error",
      message: "Shell closed",
      reason: "shell_closed",
    });
    expect(parseServerText("plain")).toEqual({ kind: "other" });
  });
});

describe("watchers frames", () => {
  it("say who watches, and nothing once nobody does", () => {
    const watched = JSON.stringify({ type: "watchers", watchers: [{ userId: "1", username: "admin" }], message: "Admin is watching this session (read-only)" });
    expect(parseServerText(watched)).toEqual({
      kind: "watchers",
      message: "Admin is watching this session (read-only)",
      count: 1,
      // a server of an older version sends no mode: a live viewer
      joiners: [{ userId: "1", username: "admin", displayName: "", mode: "watch", moderator: false }],
    });
    const nobody = JSON.stringify({ type: "watchers", watchers: [], message: "Nobody is watching this session any more" });
    expect(parseServerText(nobody)).toEqual({ kind: "watchers", message: "", count: 0, joiners: [] });
  });
});

describe("isMultiline", () => {
  it("asks for text with a line break, not for one line", () => {
    expect(isMultiline("ls -l")).toBe(false);
    expect(isMultiline("echo a\necho b")).toBe(true);
    expect(isMultiline("rm -rf build\r")).toBe(true);
  });
});

describe("joining frames", () => {
  it("reads a refused action (a paste the gateway dropped)", () => {
    expect(parseServerText(JSON.stringify({ type: "refused", action: "paste", message: "Pasting is not allowed" }))).toEqual({
      kind: "refused",
      action: "paste",
      message: "Pasting is not allowed",
    });
  });

  it("reads what a command rule did, and ignores a state it does not know", () => {
    const frame = { type: "commandRule", state: "held", message: "Command held", rule: "sudo", command: "sudo reboot", heldId: "h1" };
    expect(parseServerText(JSON.stringify(frame))).toEqual({ kind: "commandRule", state: "held", message: "Command held", rule: "sudo", command: "sudo reboot", heldId: "h1" });
    expect(parseServerText(JSON.stringify({ type: "commandRule", state: "blocked", message: "Command blocked" }))).toEqual({
      kind: "commandRule", state: "blocked", message: "Command blocked", rule: "", command: "", heldId: "",
    });
    expect(parseServerText(JSON.stringify({ ...frame, state: "exploded" }))).toEqual({ kind: "other" });
  });

  it("reads the session id, the moderation state and who joined", () => {
    expect(parseServerText(JSON.stringify({ type: "session", sessionId: "s1" }))).toEqual({ kind: "session", sessionId: "s1" });
    expect(parseServerText(JSON.stringify({ type: "moderation", state: "paused", message: "held", graceSeconds: 60 }))).toEqual({
      kind: "moderation",
      state: "paused",
      message: "held",
    });
    expect(parseServerText(JSON.stringify({ type: "moderation", state: "bogus", message: "x" }))).toEqual({ kind: "other" });
    const frame = parseServerText(
      JSON.stringify({ type: "watchers", message: "Bob is in", watchers: [{ userId: "u2", username: "bob", displayName: "Bob", mode: "participant", moderator: true }] }),
    );
    expect(frame).toEqual({
      kind: "watchers",
      message: "Bob is in",
      count: 1,
      joiners: [{ userId: "u2", username: "bob", displayName: "Bob", mode: "participant", moderator: true }],
    });
  });
});
