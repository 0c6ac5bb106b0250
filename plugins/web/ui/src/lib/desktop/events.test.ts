import { describe, expect, it } from "vitest";
import { EventBatch, MOVE_INTERVAL_MS } from "./events";

describe("recorded input events", () => {
  it("keeps clicks and keys, throttles moves, in milliseconds since the start", () => {
    const batch = new EventBatch(1000);
    batch.add("move", 1000);
    batch.add("move", 1100); // dropped: too soon
    batch.add("click", 1200.4);
    batch.add("key", 1300);
    batch.add("key", 1301);
    batch.add("move", 1000 + MOVE_INTERVAL_MS);
    expect(batch.take()).toEqual([
      { elapsed: 0, type: "move" },
      { elapsed: 200, type: "click" },
      { elapsed: 300, type: "key" },
      { elapsed: 301, type: "key" },
      { elapsed: MOVE_INTERVAL_MS, type: "move" },
    ]);
    expect(batch.take()).toEqual([]);
  });
});
