import { describe, expect, it } from "vitest";
import type { FileEntry, Protocol } from "../api/types";
import {
  baseName,
  breadcrumbs,
  downloadUrl,
  fileProtocolFor,
  foldersOf,
  gridToMode,
  joinPath,
  modeToGrid,
  octal,
  parentPath,
  type Picked,
  sortEntries,
} from "./files";

const entry = (filename: string, size: number, isDirectory = false, mtime = ""): FileEntry => ({
  filename,
  fileAttributes: { size, isDirectory, mtime },
});

describe("paths", () => {
  it("joins relative, absolute and root paths", () => {
    expect(joinPath("", "a.txt")).toBe("a.txt");
    expect(joinPath("docs", "a.txt")).toBe("docs/a.txt");
    expect(joinPath("/", "srv")).toBe("/srv");
    expect(joinPath("/srv/", "x")).toBe("/srv/x");
  });

  it("finds parents and base names", () => {
    expect(parentPath("docs/a.txt")).toBe("docs");
    expect(parentPath("docs")).toBe("");
    expect(parentPath("/srv")).toBe("/");
    expect(parentPath("/")).toBe("/");
    expect(parentPath("/srv/x/")).toBe("/srv");
    expect(baseName("docs/a.txt")).toBe("a.txt");
    expect(baseName("/srv/")).toBe("srv");
  });

  it("builds breadcrumbs from the start directory or the root", () => {
    expect(breadcrumbs("")).toEqual([{ label: "Home", path: "" }]);
    expect(breadcrumbs("a/b")).toEqual([
      { label: "Home", path: "" },
      { label: "a", path: "a" },
      { label: "b", path: "a/b" },
    ]);
    expect(breadcrumbs("/srv/www").map((c) => c.path)).toEqual(["/", "/srv", "/srv/www"]);
  });

  it("makes a download link with the path escaped", () => {
    expect(downloadUrl("sftp", "c1", "a b/ü&.txt")).toBe("/api/v1/sftp/c1/download?path=a%20b%2F%C3%BC%26.txt");
  });
});

describe("sortEntries", () => {
  const list = [entry("b.txt", 5, false, "2026-01-02"), entry("Zeta", 0, true), entry("a.txt", 10, false, "2026-01-01"), entry("alpha", 0, true)];

  it("puts folders first and sorts names case-insensitively", () => {
    expect(sortEntries(list, "name", true).map((e) => e.filename)).toEqual(["alpha", "Zeta", "a.txt", "b.txt"]);
    expect(sortEntries(list, "name", false).map((e) => e.filename)).toEqual(["Zeta", "alpha", "b.txt", "a.txt"]);
  });

  it("sorts by size and date", () => {
    expect(sortEntries(list, "size", false).map((e) => e.filename).slice(2)).toEqual(["a.txt", "b.txt"]);
    expect(sortEntries(list, "mtime", true).map((e) => e.filename).slice(2)).toEqual(["a.txt", "b.txt"]);
  });
});

describe("permission bits", () => {
  it("round-trips a mode through the rwx grid, keeping special bits", () => {
    const grid = modeToGrid(0o100644);
    expect(grid).toEqual([
      [true, true, false],
      [true, false, false],
      [true, false, false],
    ]);
    grid[0][2] = true;
    expect(octal(gridToMode(grid, 0o4644))).toBe("4744");
    expect(octal(gridToMode(modeToGrid(0o755)))).toBe("0755");
  });
});

describe("fileProtocolFor", () => {
  const protocols = [
    { name: "sftp", files: true, servesConnections: ["ssh"] },
    { name: "ssh", files: false, servesConnections: [] },
    { name: "smb", files: true, servesConnections: [] },
    { name: "telnet", files: false, servesConnections: [] },
  ] as unknown as Protocol[];

  it("uses the connection's own file protocol, or the one that serves it", () => {
    expect(fileProtocolFor("smb", protocols)).toBe("smb");
    expect(fileProtocolFor("ssh", protocols)).toBe("sftp");
    expect(fileProtocolFor("telnet", protocols)).toBeNull();
  });
});

describe("foldersOf", () => {
  const picked = (relativePath: string): Picked => ({ relativePath, file: {} as File });

  it("lists every folder a dropped tree needs, parents first", () => {
    expect(foldersOf([picked("a.txt"), picked("tree/b/c.txt"), picked("tree/d.txt"), picked("tree/b/e/f.txt")])).toEqual([
      "tree",
      "tree/b",
      "tree/b/e",
    ]);
  });

  it("needs none for plain files", () => {
    expect(foldersOf([picked("a.txt"), picked("b.txt")])).toEqual([]);
  });
});
