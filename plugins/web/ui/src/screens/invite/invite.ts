// The invite page's logic without markup: the secret from the fragment, what a refusal means.

/** The secret of an invite link's fragment ("#<secret>"), or "" when there is none. */
export function inviteSecret(hash: string): string {
  const secret = hash.replace(/^#/, "").trim();
  return /^[A-Za-z0-9_-]{20,200}$/.test(secret) ? secret : "";
}

const PROBLEMS: Record<string, { title: string; text: string }> = {
  invite_expired: {
    title: "This invite has expired",
    text: "Invite links last a few days. Ask your administrator for a new one.",
  },
  invite_used: {
    title: "This invite was already used",
    text: "The account is set up. Sign in with its password, or ask your administrator to reset it.",
  },
  invite_revoked: {
    title: "This invite was withdrawn",
    text: "An administrator withdrew this link or sent a newer one. Use the newest link, or ask for one.",
  },
  invite_invalid: {
    title: "This invite link is not valid",
    text: "Check that you copied the whole link, or ask your administrator for a new one.",
  },
  account_suspended: {
    title: "This account is suspended",
    text: "An administrator suspended the account this link is for.",
  },
};

/** The page for a refused link (by the API's code), or null when the code is not about the link. */
export function inviteProblem(code: string): { title: string; text: string } | null {
  return PROBLEMS[code] ?? null;
}
