import { describe, expect, it } from "vitest";
import { eventsUrl, liveRetryDelay, parseLiveFrame } from "./livechannel";

describe("the live channel", () => {
  it("opens on the page's origin, wss under https", () => {
    expect(eventsUrl({ protocol: "https:", host: "gw.example" }, "a b")).toBe("wss://gw.example/ws/events?ticket=a+b");
    expect(eventsUrl({ protocol: "http:", host: "localhost:8080" }, "t")).toBe("ws://localhost:8080/ws/events?ticket=t");
  });

  it("reads ready and changed frames, nothing else", () => {
    expect(parseLiveFrame('{"type":"ready"}')).toBe("ready");
    expect(parseLiveFrame('{"type":"changed","topic":"access-requests"}')).toBe("access-requests");
    expect(parseLiveFrame('{"type":"changed"}')).toBeNull();
    expect(parseLiveFrame('{"type":"error","message":"x"}')).toBeNull();
    expect(parseLiveFrame("not json")).toBeNull();
    expect(parseLiveFrame("null")).toBeNull();
  });

  it("comes back after a drop, backing off to a minute, but not once signed out", () => {
    expect([0, 1, 2, 6, 9].map((attempt) => liveRetryDelay(1006, attempt))).toEqual([1000, 2000, 4000, 60_000, 60_000]);
    expect(liveRetryDelay(4001, 0)).toBeNull();
  });
});
