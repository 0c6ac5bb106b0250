// The one way the app talks to the gateway: openapi-fetch typed by schema.d.ts, which
// scripts/web_api_types.py generates from the gateway's OpenAPI document.
import createClient from "openapi-fetch";
import { ApiError, SESSION_ENDED } from "../lib/errors";
import type { paths } from "./schema";

/** Typed client; paths and request bodies are checked against the gateway's document. */
export const api = createClient<paths>({ baseUrl: "", credentials: "same-origin" });

type Listener = (error: ApiError) => void;
const sessionEndedListeners = new Set<Listener>();

/** Called when any request answers 401 with a "session is gone" code. */
export function onSessionEnded(listener: Listener): () => void {
  sessionEndedListeners.add(listener);
  return () => sessionEndedListeners.delete(listener);
}

/** Tell the session listeners when `error` means the session is gone (a 401 with such a
 * code), for requests made outside `call()` (uploads are XMLHttpRequests). */
export function reportSessionEnded(error: ApiError): void {
  if (error.status === 401 && SESSION_ENDED.has(error.code)) {
    for (const listener of sessionEndedListeners) listener(error);
  }
}

interface Outcome {
  data?: unknown;
  error?: unknown;
  response: Response;
}

/**
 * Await an `api.GET/POST/...` call: its body as `T`, or an ApiError (network failures
 * included). A 401 that ends the session also tells the session listeners.
 */
export async function call<T>(request: Promise<Outcome>): Promise<T> {
  let outcome: Outcome;
  try {
    outcome = await request;
  } catch {
    throw ApiError.network();
  }
  if (!outcome.response.ok) {
    const error = ApiError.from(outcome.response, outcome.error);
    reportSessionEnded(error);
    throw error;
  }
  return outcome.data as T;
}
