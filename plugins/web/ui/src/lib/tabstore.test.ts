import { describe, expect, it } from "vitest";
import { parseStoredTabs, reattachDelay, storedTabsText, tabLabels } from "./tabstore";

const shell = { key: "t1", connectionId: "c1", name: "prod-db", protocol: "ssh", sessionId: "s-1" };
const desk = { key: "d2", connectionId: "c2", name: "office", protocol: "vnc", kind: "desktop" as const };

describe("stored tabs", () => {
  it("come back for the same user, fields and split pair intact", () => {
    const second = { ...shell, key: "t3", sessionId: "s-3", ended: true, files: "/var/log" };
    const text = storedTabsText({ user: "u1", counter: 3, list: [shell, desk, second], split: ["t1", "t3"] });
    expect(parseStoredTabs(text, "u1")).toEqual({ user: "u1", counter: 3, list: [shell, desk, second], split: ["t1", "t3"] });
  });

  it("are another user's: nothing comes back", () => {
    const text = storedTabsText({ user: "u1", counter: 1, list: [shell], split: null });
    expect(parseStoredTabs(text, "u2")).toBeNull();
  });

  it("drop what is broken, unknown or repeated, and keep the key counter past every key", () => {
    const raw = JSON.stringify({
      user: "u1",
      counter: 1,
      list: [shell, { ...shell, name: "again" }, { key: "x9", connectionId: "c", name: "n", protocol: "ssh" }, { key: "t7" }, "t8", { ...desk, key: "d5", state: "connected", secret: "no" }],
      split: ["t1", "d5"],
    });
    const stored = parseStoredTabs(raw, "u1");
    expect(stored?.list).toEqual([shell, { ...desk, key: "d5" }]);
    expect(stored?.counter).toBe(5);
    expect(stored?.split).toBeNull(); // a desktop is never half of the split view
  });

  it("are nothing when unreadable", () => {
    expect(parseStoredTabs(null, "u1")).toBeNull();
    expect(parseStoredTabs("{", "u1")).toBeNull();
    expect(parseStoredTabs('"text"', "u1")).toBeNull();
    expect(parseStoredTabs(JSON.stringify({ user: "u1", list: "t1" }), "u1")).toBeNull();
  });

  it("keep no run-time field", () => {
    const text = storedTabsText({ user: "u1", counter: 1, list: [{ ...shell, state: "connected" } as typeof shell], split: null });
    expect(JSON.parse(text).list[0]).toEqual(shell);
  });
});

describe("tab labels", () => {
  it("tell two tabs of one connection apart, in the order they were opened", () => {
    const labels = tabLabels([shell, desk, { ...shell, key: "t3" }, { ...shell, key: "t4" }]);
    expect([...labels.values()]).toEqual(["prod-db", "office", "prod-db (2)", "prod-db (3)"]);
  });
});

describe("re-attach on a dropped socket", () => {
  it("retries only a drop without the gateway's close, a few times, backing off", () => {
    expect([0, 1, 2, 3, 4].map((attempt) => reattachDelay(1006, attempt))).toEqual([1000, 2000, 4000, 8000, 16000]);
    expect(reattachDelay(1006, 5)).toBeNull();
    expect(reattachDelay(1000, 0)).toBeNull(); // the shell ended
    expect(reattachDelay(4003, 0)).toBeNull(); // opened in another window, revoked
    expect(reattachDelay(0, 0)).toBeNull(); // no ticket on the first try: the tab says why
    expect(reattachDelay(0, 1)).toBe(2000); // still offline during a retry
  });
});
