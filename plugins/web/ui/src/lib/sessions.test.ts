import { describe, expect, it } from "vitest";
import {
  doorFact,
  doorMark,
  addressForSearch,
  eventTicks,
  filtersFromSearch,
  historyQuery,
  NO_FILTERS,
  playAt,
  recordingSearchFromAddress,
  recordingSearchQuery,
  snippetPieces,
  searchFromFilters,
  startFromAddress,
  addressWithTime,
  watchUrl,
} from "./sessions";

describe("history filters", () => {
  it("become the API's query, leaving out what is empty", () => {
    expect(historyQuery(NO_FILTERS, 1, 25)).toEqual({ page: 1, limit: 25 });
    const query = historyQuery({ ...NO_FILTERS, protocol: "ssh", search: " web ", recorded: "true", from: "2026-11-20" }, 2, 25);
    expect(query.protocol).toBe("ssh");
    expect(query.search).toBe("web");
    expect(query.recorded).toBe("true");
    expect(query.page).toBe(2);
    expect(new Date(String(query.from)).getDate()).toBe(20);
  });

  it("round-trip through the address", () => {
    const filters = { ...NO_FILTERS, protocol: "rdp", userId: "u1", to: "2026-11-21" };
    const search = searchFromFilters(filters, 3);
    expect(filtersFromSearch(search)).toEqual({ filters, page: 3 });
    expect(searchFromFilters(NO_FILTERS, 1)).toBe("");
    expect(filtersFromSearch("?recorded=maybe&page=-2")).toEqual({ filters: NO_FILTERS, page: 1 });
  });
});

describe("eventTicks", () => {
  it("puts clicks and keys on the timeline, moves left out, close ones together", () => {
    const ticks = eventTicks(
      [
        { elapsed: 1000, event_type: "click" },
        { elapsed: 1001, event_type: "key" },
        { elapsed: 1002, event_type: "key" },
        { elapsed: 5000, event_type: "move" },
        { elapsed: 9000, event_type: "click" },
      ],
      10,
    );
    expect(ticks.map((t) => t.time)).toEqual([1, 9]);
    expect(ticks[0].label).toBe("1 click, 2 keys");
    expect(ticks[0].position).toBeCloseTo(10);
    expect(ticks[1].position).toBeCloseTo(90);
  });

  it("keeps events 1 ms apart together wherever they fall on the timeline", () => {
    // 10 s in 200 buckets of 50 ms: 1.549 s and 1.550 s straddle a bucket edge
    const ticks = eventTicks(
      [
        { elapsed: 1550, event_type: "key" },
        { elapsed: 1549, event_type: "key" },
        { elapsed: 3000, event_type: "click" },
      ],
      10,
    );
    expect(ticks.map((t) => t.label)).toEqual(["2 keys", "1 click"]);
    expect(ticks[0].time).toBeCloseTo(1.549);
    // on the e2e test's timeline (2.5 s, buckets of 12.5 ms): two keys 1 ms apart, at every offset
    for (let start = 1450; start < 1550; start += 1) {
      const keys = eventTicks(
        [
          { elapsed: start, event_type: "key" },
          { elapsed: start + 1, event_type: "key" },
        ],
        2.5,
      );
      expect(keys).toHaveLength(1);
    }
  });

  it("starts a new tick once the gap to the previous event is a bucket wide", () => {
    // 200 buckets of 50 ms over 10 s: 49 ms apart join, 50 ms apart do not
    const joined = eventTicks(
      [
        { elapsed: 1000, event_type: "key" },
        { elapsed: 1049, event_type: "key" },
        { elapsed: 1098, event_type: "key" },
      ],
      10,
    );
    expect(joined.map((t) => t.label)).toEqual(["3 keys"]);
    const apart = eventTicks(
      [
        { elapsed: 1000, event_type: "key" },
        { elapsed: 1050, event_type: "key" },
      ],
      10,
    );
    expect(apart.map((t) => t.time)).toEqual([1, 1.05]);
  });

  it("stretches the timeline to the last event when the video is shorter or unknown", () => {
    const [tick] = eventTicks([{ elapsed: 4000, event_type: "click" }], Number.POSITIVE_INFINITY);
    expect(tick.position).toBeCloseTo(100);
  });
});

describe("watchUrl", () => {
  it("is the gateway's watch socket with the ticket", () => {
    expect(watchUrl({ protocol: "https:", host: "gw.example" }, "s 1", "t")).toBe("wss://gw.example/ws/sessions/s%201/watch?ticket=t");
  });
});

describe("recording search", () => {
  it("keeps the words, the kind and the filters in the address", () => {
    const filters = { ...NO_FILTERS, protocol: "ssh" };
    const address = addressForSearch(filters, " rm -rf ", "command", 2);
    expect(recordingSearchFromAddress(address)).toEqual({ q: "rm -rf", kind: "command" });
    expect(filtersFromSearch(address)).toEqual({ filters, page: 2 });
    expect(recordingSearchFromAddress("?protocol=ssh")).toBeNull();
    expect(recordingSearchFromAddress("?q=x&kind=bogus")).toEqual({ q: "x", kind: "" });
    expect(addressForSearch(NO_FILTERS, "  ", "output", 1)).toBe("");
  });

  it("becomes the API's query and opens the player at the hit", () => {
    expect(recordingSearchQuery(NO_FILTERS, "nginx", "", 1, 25)).toEqual({ page: 1, limit: 25, q: "nginx" });
    expect(recordingSearchQuery(NO_FILTERS, "nginx", "output", 1, 25).kind).toBe("output");
    expect(playAt("a b", 12.345)).toBe("/sessions/a%20b/play?t=12.4");
    expect(startFromAddress("?t=12.3")).toBe(12.3);
    expect(startFromAddress("?t=-1")).toBe(0);
    expect(startFromAddress("?t=abc")).toBe(0);
  });
});

describe("snippetPieces", () => {
  it("draws the server's parts: marked where the words are, line breaks kept", () => {
    const parts = [
      { text: "$ echo ", match: false },
      { text: "needle-found", match: true },
      { text: "\nneedle\nfound", match: false },
    ];
    expect(snippetPieces("$ echo needle-found\nneedle\nfound", parts)).toEqual(parts);
  });
  it("drops empty parts", () => {
    expect(snippetPieces("ab", [{ text: "", match: true }, { text: "a", match: true }, { text: "b", match: false }])).toEqual([
      { text: "a", match: true },
      { text: "b", match: false },
    ]);
  });
  it("shows the snippet unmarked when the parts are missing or do not add up to it", () => {
    expect(snippetPieces("plain text", undefined)).toEqual([{ text: "plain text", match: false }]);
    expect(snippetPieces("plain text", [{ text: "plain", match: true }])).toEqual([{ text: "plain text", match: false }]);
    expect(snippetPieces("", [])).toEqual([]);
  });
});

describe("the player's moment in the address", () => {
  it("is kept to the whole second, with the rest of the query, and dropped at the start", () => {
    expect(addressWithTime("", 12.7)).toBe("?t=12");
    expect(addressWithTime("?t=3&x=1", 40)).toBe("?t=40&x=1");
    expect(addressWithTime("?t=3&x=1", 0.4)).toBe("?x=1");
    expect(addressWithTime("?t=3", Number.NaN)).toBe("");
    expect(startFromAddress(addressWithTime("", 12.7))).toBe(12);
  });
});

describe("the door a session came in by", () => {
  it("marks front-door sessions and leaves the app's own unmarked", () => {
    expect(doorMark("ssh")).toBe("via ssh");
    expect(doorMark("")).toBeNull();
    expect(doorMark(undefined)).toBeNull();
    expect(doorFact("ssh")).toBe("the SSH front door (ssh)");
    expect(doorFact("")).toBe("the browser app");
  });
});
