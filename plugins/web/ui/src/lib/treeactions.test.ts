import { beforeEach, describe, expect, it, vi } from "vitest";

// what the tree showed and said, in order
const seen: string[] = [];

vi.mock("../api/client", () => ({
  api: { PUT: vi.fn(async () => ({})), POST: vi.fn(async () => ({})), DELETE: vi.fn(async () => ({})) },
  call: vi.fn(async () => ({})),
}));

vi.mock("./connections.svelte", () => ({
  connections: { listing: null },
  reloadConnections: vi.fn(async () => {
    await Promise.resolve();
    seen.push(`reloaded (status then: "${treeStatusNow()}")`);
  }),
}));

vi.mock("./session.svelte", () => ({ session: { me: null } }));

import { call } from "../api/client";
import { applyMove, createGroup, renameGroup, treeStatus } from "./treeactions.svelte";

function treeStatusNow(): string {
  return treeStatus.message;
}

describe("a tree change is announced once the tree shows it", () => {
  beforeEach(() => {
    seen.length = 0;
    treeStatus.message = "";
    treeStatus.error = "";
  });

  it("renames, then reloads, then says so", async () => {
    await renameGroup("g1", "Edge sites");
    expect(seen).toEqual(['reloaded (status then: "")']);
    expect(treeStatus.message).toBe("Renamed the group to Edge sites.");
  });

  it("creates a group, then reloads, then says so", async () => {
    await createGroup("Edge", null);
    expect(seen).toEqual(['reloaded (status then: "")']);
    expect(treeStatus.message).toBe("Created the group Edge.");
  });

  it("moves, reloads, then says so; a refused move says why and is reloaded too", async () => {
    const plan = { item: { kind: "group" as const, id: "g1" }, parent: undefined, order: [] };
    expect(await applyMove(plan)).toBe(true);
    expect(seen).toEqual(['reloaded (status then: "")']);
    expect(treeStatus.message).toMatch(/^Moved /);

    seen.length = 0;
    treeStatus.message = "";
    vi.mocked(call).mockRejectedValueOnce(new Error("refused"));
    expect(await applyMove(plan)).toBe(false);
    expect(seen).toEqual(['reloaded (status then: "")']);
    expect(treeStatus.message).toBe("");
    expect(treeStatus.error).not.toBe("");
  });
});
