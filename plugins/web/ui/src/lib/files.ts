// File-browser logic without markup: paths, breadcrumbs, sorting, permission bits, the
// protocol segment of the file routes. Pure, so Vitest checks it.
import type { FileEntry, Protocol } from "../api/types";

/**
 * Paths are what the gateway takes: "" is the directory the login starts in, relative
 * paths ("docs/a.txt") start there, absolute ones ("/srv") at the server's root.
 */
export function joinPath(directory: string, name: string): string {
  if (directory === "") return name;
  return directory.endsWith("/") ? `${directory}${name}` : `${directory}/${name}`;
}

/** The directory holding `path` ("" for a top-level relative name, "/" for "/x"). */
export function parentPath(path: string): string {
  const trimmed = path.length > 1 ? path.replace(/\/+$/, "") : path;
  const cut = trimmed.lastIndexOf("/");
  if (cut < 0) return "";
  if (cut === 0) return "/";
  return trimmed.slice(0, cut);
}

/** The last part of a path. */
export function baseName(path: string): string {
  const trimmed = path.length > 1 ? path.replace(/\/+$/, "") : path;
  return trimmed.slice(trimmed.lastIndexOf("/") + 1);
}

export interface Crumb {
  label: string;
  path: string;
}

/** Breadcrumbs from the start directory (or the root, for absolute paths) to `path`. */
export function breadcrumbs(path: string): Crumb[] {
  const absolute = path.startsWith("/");
  const crumbs: Crumb[] = [absolute ? { label: "/", path: "/" } : { label: "Home", path: "" }];
  let current = absolute ? "/" : "";
  for (const part of path.split("/").filter(Boolean)) {
    current = joinPath(current, part);
    crumbs.push({ label: part, path: current });
  }
  return crumbs;
}

export type SortKey = "name" | "size" | "mtime" | "permissions";

/** Folders first, then by `key` (names case-insensitively, ties by name). */
export function sortEntries(entries: FileEntry[], key: SortKey, ascending: boolean): FileEntry[] {
  const byName = (a: FileEntry, b: FileEntry) =>
    a.filename.localeCompare(b.filename, undefined, { sensitivity: "base", numeric: true });
  const compare = (a: FileEntry, b: FileEntry): number => {
    switch (key) {
      case "size":
        return a.fileAttributes.size - b.fileAttributes.size;
      case "mtime":
        return (a.fileAttributes.mtime ?? "").localeCompare(b.fileAttributes.mtime ?? "");
      case "permissions":
        return (a.fileAttributes.permissions ?? "").localeCompare(b.fileAttributes.permissions ?? "");
      default:
        return byName(a, b);
    }
  };
  return [...entries].sort((a, b) => {
    const folders = Number(b.fileAttributes.isDirectory) - Number(a.fileAttributes.isDirectory);
    if (folders !== 0) return folders;
    const order = compare(a, b) || byName(a, b);
    return ascending ? order : -order;
  });
}

/** Names starting with a dot are hidden unless asked for. */
export function isHidden(entry: FileEntry): boolean {
  return entry.filename.startsWith(".");
}

export const WHO = ["Owner", "Group", "Others"] as const;
export const WHAT = ["Read", "Write", "Execute"] as const;

/** The 3×3 read/write/execute grid of a mode's permission bits (owner first). */
export function modeToGrid(mode: number): boolean[][] {
  return WHO.map((_, who) => WHAT.map((_, what) => Boolean(mode & (1 << (8 - who * 3 - what)))));
}

/** The mode from the grid, keeping `mode`'s setuid/setgid/sticky bits. */
export function gridToMode(grid: boolean[][], mode = 0): number {
  let bits = mode & 0o7000;
  grid.forEach((row, who) => row.forEach((on, what) => { if (on) bits |= 1 << (8 - who * 3 - what); }));
  return bits;
}

/** "0644" */
export function octal(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, "0");
}

/**
 * The protocol segment of the file routes for a connection: its own protocol when that
 * serves files, or the file protocol that serves it (SSH connections use `/sftp/`).
 */
export function fileProtocolFor(protocol: string, protocols: Protocol[]): string | null {
  const own = protocols.find((p) => p.name === protocol);
  if (own?.files) return own.name;
  const serving = protocols.find((p) => p.files && p.servesConnections.includes(protocol));
  return serving ? serving.name : null;
}

/** The download route's address for a file: a plain link, the browser streams it to disk. */
export function downloadUrl(protocol: string, connectionId: string, path: string): string {
  return `/api/v1/${encodeURIComponent(protocol)}/${encodeURIComponent(connectionId)}/download?path=${encodeURIComponent(path)}`;
}

/** One file to upload: where it goes below the target directory, and the file. */
export interface Picked {
  /** "a.txt", or "folder/sub/a.txt" for files inside a dropped or picked folder */
  relativePath: string;
  file: File;
}

/** The folders that must exist below the target before `picked` can be uploaded, parents first. */
export function foldersOf(picked: Picked[]): string[] {
  const folders = new Set<string>();
  for (const { relativePath } of picked) {
    const parts = relativePath.split("/").slice(0, -1);
    for (let i = 1; i <= parts.length; i++) folders.add(parts.slice(0, i).join("/"));
  }
  return [...folders].sort((a, b) => a.split("/").length - b.split("/").length || a.localeCompare(b));
}
