import { describe, expect, it } from "vitest";
import type { ChannelState } from "../types";
import { blockedBy, channelTargets, covers, needsAllowWarning, onlyLoopback, rulesOf, updateTarget, withoutLoopback } from "./network";

describe("the allow-list warning", () => {
  it("is needed when a save makes the allow list non-empty or changes it, not when it empties it", () => {
    expect(needsAllowWarning("", "loopback")).toBe(true);
    expect(needsAllowWarning("10.0.0.0/8", "10.0.0.0/8, loopback")).toBe(true);
    expect(needsAllowWarning("loopback", "loopback")).toBe(false);
    expect(needsAllowWarning("loopback", "")).toBe(false);
  });

  it("lists what the list would refuse: channels and the update check no entry covers", () => {
    const channels = [
      { id: "smtp", title: "Email", enabled: true, config: { host: "mail.example.org" } },
      { id: "webhook", title: "Webhook", enabled: true, config: { url: "https://10.1.2.3:8443/in" } },
      { id: "telegram", title: "Telegram", enabled: true, config: { botToken: "••••••••" } },
      { id: "slack", title: "Slack", enabled: false, config: {} },
    ] as unknown as ChannelState[];
    const targets = [...channelTargets(channels), ...updateTarget("https://updates.example.com/feed.json")];
    expect(targets.map((t) => t.host)).toEqual(["mail.example.org", "10.1.2.3", "api.telegram.org", "updates.example.com"]);
    expect(blockedBy("loopback", targets).map((t) => t.what)).toEqual([
      "Notification channel Email",
      "Notification channel Webhook",
      "Notification channel Telegram",
      "The update check",
    ]);
    expect(blockedBy("loopback, 10.0.0.0/8, *.example.org, api.telegram.org", targets).map((t) => t.what)).toEqual(["The update check"]);
    expect(updateTarget("")).toEqual([]);
  });

  it("reads rules as the server splits them and matches addresses, keywords and patterns", () => {
    expect(rulesOf(" Loopback,\n10.0.0.0/8  db-*.lan")).toEqual(["loopback", "10.0.0.0/8", "db-*.lan"]);
    expect(covers(["loopback"], "127.0.0.1")).toBe(true);
    expect(covers(["loopback"], "localhost")).toBe(true);
    expect(covers(["private"], "192.168.1.9")).toBe(true);
    expect(covers(["10.0.0.0/8"], "11.0.0.1")).toBe(false);
    expect(covers(["db-*.lan"], "db-1.lan")).toBe(true);
    expect(covers(["db-*.lan"], "web.lan")).toBe(false);
  });
});

describe("allow loopback", () => {
  it("is the protected-list change when the allow list would only name loopback", () => {
    expect(onlyLoopback("loopback")).toBe(true);
    expect(onlyLoopback("loopback, 10.0.0.0/8")).toBe(false);
    expect(withoutLoopback("loopback, link-local, metadata")).toBe("link-local, metadata");
  });
});
