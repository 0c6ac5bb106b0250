import { describe, expect, it } from "vitest";
import { randomId } from "./ids";

const UUID4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("randomId", () => {
  it("is a UUID v4", () => {
    expect(randomId()).toMatch(UUID4);
  });

  it("still is where randomUUID is missing (plain http on a LAN address)", () => {
    const original = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(crypto), "randomUUID");
    Object.defineProperty(crypto, "randomUUID", { value: undefined, configurable: true });
    try {
      const ids = new Set(Array.from({ length: 50 }, randomId));
      expect(ids.size).toBe(50);
      for (const id of ids) expect(id).toMatch(UUID4);
    } finally {
      delete (crypto as { randomUUID?: unknown }).randomUUID;
      if (original && typeof crypto.randomUUID !== "function") Object.defineProperty(crypto, "randomUUID", original);
    }
  });
});
