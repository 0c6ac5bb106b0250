import { describe, expect, it } from "vitest";
import { match } from "./paths";

describe("match", () => {
  it("extracts parameters", () => {
    expect(match("/connections/:id/edit", "/connections/c%201/edit")).toEqual({ id: "c 1" });
  });
  it("refuses other shapes", () => {
    expect(match("/connections/:id", "/connections/c1/edit")).toBeNull();
    expect(match("/connections/new", "/connections/c1")).toBeNull();
  });
  it("matches the root", () => {
    expect(match("/", "/")).toEqual({});
  });
  it("refuses a malformed escape instead of throwing", () => {
    expect(match("/connections/:id", "/connections/%E0%A4%A")).toBeNull();
  });
});
