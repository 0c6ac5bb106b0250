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

/** What an `api.GET/POST/...` call resolves to: openapi-fetch's `FetchResponse`, whose
 * `data` is the operation's success body as schema.d.ts types it. */
interface Outcome<D> {
  data?: D;
  error?: unknown;
  response: Response;
}

/** A success body's type: `undefined` for an operation that answers without one (204). */
export type Body<D> = [D] extends [never] ? undefined : D;

/**
 * Await an `api.GET/POST/...` call: its body, typed by the gateway's OpenAPI document
 * (schema.d.ts) through openapi-fetch, or an ApiError (network failures included). A 401
 * that ends the session also tells the session listeners.
 *
 * Let the body's type be inferred: `call(api.GET("/api/v1/users"))`. A type argument
 * (`call<X>(...)`) is checked against the document, never a cast.
 */
export async function call<D>(request: Promise<Outcome<D>>): Promise<Body<D>> {
  let outcome: Outcome<D>;
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
  return outcome.data as Body<D>;
}
