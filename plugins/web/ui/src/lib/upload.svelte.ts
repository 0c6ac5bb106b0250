// Uploads: each file goes to the upload route as the body of an XMLHttpRequest, so the
// browser streams it from disk and reports progress; nothing reads it into memory.
import { reportSessionEnded } from "../api/client";
import { ApiError } from "./errors";
import { joinPath, type Picked } from "./files";
import { randomId } from "./ids";

/** This tab's file-session id for a connection (sessionStorage: per tab, kept on reload). */
export function tabSessionId(connectionId: string): string {
  const key = `hostgate.fileSession.${connectionId}`;
  try {
    const known = sessionStorage.getItem(key);
    if (known) return known;
    const made = randomId();
    sessionStorage.setItem(key, made);
    return made;
  } catch {
    return randomId();
  }
}

/**
 * A running upload's line is redrawn at most this often. Chromium fires upload progress
 * every 50 ms, and redrawing the line (size, speed, bar) on each cost its renderer about
 * 0.7 s of CPU per GiB uploaded, a third of all Chromium spent on the upload, on the two
 * cores it shares with the gateway (bench/web_files.py); the speed is averaged over
 * seconds anyway.
 */
export const SHOW_EVERY_MS = 250;

export type TransferState = "queued" | "uploading" | "done" | "failed" | "cancelled";

/** An upload as the transfer list shows it. */
export class Transfer {
  readonly id = randomId();
  readonly name: string;
  readonly path: string;
  readonly size: number;
  loaded = $state(0);
  /** bytes per second over the last few seconds */
  speed = $state(0);
  state = $state<TransferState>("queued");
  error = $state<ApiError | null>(null);
  private xhr: XMLHttpRequest | null = null;

  constructor(
    readonly picked: Picked,
    directory: string,
  ) {
    this.name = picked.relativePath;
    this.path = joinPath(directory, picked.relativePath);
    this.size = picked.file.size;
  }

  /** Stop it: a queued transfer never starts, a running one is aborted (nothing is kept). */
  cancel(): void {
    if (this.state === "queued") this.state = "cancelled";
    this.xhr?.abort();
  }

  /** Send the file; resolves when it is done, failed or cancelled. */
  run(url: string, fileSessionId: string): Promise<void> {
    if (this.state !== "queued") return Promise.resolve();
    this.state = "uploading";
    const xhr = new XMLHttpRequest();
    this.xhr = xhr;
    const samples: [number, number][] = [[performance.now(), 0]];
    let shown = -Infinity;
    return new Promise((resolve) => {
      xhr.upload.onprogress = (event) => {
        const now = performance.now();
        samples.push([now, event.loaded]);
        while (samples.length > 2 && now - samples[0][0] > 3000) samples.shift();
        if (now - shown < SHOW_EVERY_MS) return;
        shown = now;
        this.loaded = event.loaded;
        const [t0, b0] = samples[0];
        if (now > t0) this.speed = ((event.loaded - b0) * 1000) / (now - t0);
      };
      xhr.onload = () => {
        if (xhr.status >= 200 && xhr.status < 300) {
          this.loaded = this.size;
          this.state = "done";
        } else {
          this.error = errorOf(xhr);
          this.state = "failed";
          reportSessionEnded(this.error); // signed out meanwhile: back to sign-in, saying why
        }
        resolve();
      };
      xhr.onerror = () => {
        this.error = ApiError.network();
        this.state = "failed";
        resolve();
      };
      xhr.onabort = () => {
        this.state = "cancelled";
        resolve();
      };
      xhr.open("POST", url);
      xhr.setRequestHeader("Content-Type", "application/octet-stream");
      xhr.setRequestHeader("X-File-Session-Id", fileSessionId);
      xhr.send(this.picked.file);
    });
  }
}

/** The ApiError an XMLHttpRequest that failed answered with (the gateway's error shape). */
export function errorOf(xhr: XMLHttpRequest): ApiError {
  let body: { error?: unknown; code?: unknown } = {};
  try {
    body = JSON.parse(xhr.responseText) as typeof body;
  } catch {
    // not the error shape: keep the status
  }
  const retry = xhr.getResponseHeader("Retry-After");
  return new ApiError(
    xhr.status,
    typeof body.code === "string" ? body.code : `http_${xhr.status}`,
    typeof body.error === "string" ? body.error : xhr.statusText || "Upload failed",
    retry && /^\d+$/.test(retry) ? Number(retry) : null,
  );
}

/** Files from a file input (folders picked with `webkitdirectory` keep their relative paths). */
export function fromInput(files: FileList): Picked[] {
  return [...files].map((file) => ({ relativePath: file.webkitRelativePath || file.name, file }));
}

function readAll(reader: FileSystemDirectoryReader): Promise<FileSystemEntry[]> {
  return new Promise((resolve, reject) => {
    const all: FileSystemEntry[] = [];
    const next = () =>
      reader.readEntries((batch) => {
        if (batch.length === 0) resolve(all);
        else {
          all.push(...batch);
          next();
        }
      }, reject);
    next();
  });
}

async function walk(entry: FileSystemEntry, prefix: string, out: Picked[]): Promise<void> {
  const relativePath = prefix ? `${prefix}/${entry.name}` : entry.name;
  if (entry.isFile) {
    const file = await new Promise<File>((resolve, reject) => (entry as FileSystemFileEntry).file(resolve, reject));
    out.push({ relativePath, file });
  } else if (entry.isDirectory) {
    for (const child of await readAll((entry as FileSystemDirectoryEntry).createReader())) await walk(child, relativePath, out);
  }
}

/** Files and whole folders dropped on the page. */
export async function fromDrop(data: DataTransfer): Promise<Picked[]> {
  const entries = [...data.items]
    .filter((item) => item.kind === "file")
    .map((item) => item.webkitGetAsEntry?.() ?? null);
  if (entries.length === 0 || entries.some((entry) => entry === null)) {
    return [...data.files].map((file) => ({ relativePath: file.name, file }));
  }
  const out: Picked[] = [];
  for (const entry of entries) await walk(entry as FileSystemEntry, "", out);
  return out;
}
