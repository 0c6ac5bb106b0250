// The second sign-in step after a password (pure, for Vitest, but for the browser's
// WebAuthn call): which steps the gateway offered and how to ask the passkey.

/** A second step the browser app can walk a person through. */
export type SecondStep = "totp" | "passkey";

const KNOWN: readonly SecondStep[] = ["totp", "passkey"];

/** What the password step answered when a second step is due (`POST /auth/login`). */
export interface StepOffer {
  mfaMethod?: string;
  mfaMethods?: string[];
}

/** The offered steps this app knows, in the gateway's order (TOTP first when held). */
export function offeredSteps(offer: StepOffer): SecondStep[] {
  const named = offer.mfaMethods?.length ? offer.mfaMethods : [offer.mfaMethod ?? "totp"];
  const known = named.filter((name): name is SecondStep => (KNOWN as readonly string[]).includes(name));
  return [...new Set(known)];
}

/** The step shown first: a passkey when offered (one touch), else the code. */
export function firstStep(steps: SecondStep[]): SecondStep {
  return steps.includes("passkey") ? "passkey" : "totp";
}

/** What to say when the browser's passkey prompt ends without an answer. */
export function passkeyCancelled(step: boolean): string {
  return step
    ? "The passkey check was cancelled, or this device has no passkey for your account. Try again, or use another way."
    : "The passkey sign-in was cancelled or no passkey for this site was found.";
}

/** Ask the browser for an assertion with the gateway's WebAuthn options (its JSON, passed through). */
export async function assertWithPasskey(options: unknown): Promise<Record<string, unknown>> {
  const credential = (await navigator.credentials.get({
    publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options as PublicKeyCredentialRequestOptionsJSON),
  })) as PublicKeyCredential | null;
  if (!credential) throw new DOMException("no credential", "NotAllowedError");
  return credential.toJSON() as Record<string, unknown>;
}
