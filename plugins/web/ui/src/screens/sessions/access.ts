// What the signed-in user may do on the session screens (their role's permissions).
import { session } from "../../lib/session.svelte";

/** True when the signed-in user's role holds `permission`. */
export function may(permission: string): boolean {
  return session.me?.permissions.includes(permission) ?? false;
}
