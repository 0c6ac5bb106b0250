// Password strength feedback for the setup form. zxcvbn-ts and its dictionaries are
// large, so they load on first use (their own chunk), never with the sign-in screen.

/** The server's own rule (kernel security/passwords.py MIN_PASSWORD_LENGTH). */
export const MIN_PASSWORD_LENGTH = 8;

/**
 * The lowest zxcvbn score the gateway accepts (kernel security/passwords.py
 * MIN_PASSWORD_SCORE): "Very weak" (0) is refused for every account, so the meter
 * says so before the form is sent.
 */
export const MIN_PASSWORD_SCORE = 1;

export interface Strength {
  /** 0 (very weak) to 4 (very strong). */
  score: number;
  label: string;
  /** A hint to make it stronger, or "" when none. */
  hint: string;
  /** Shorter than the server's minimum. */
  tooShort: boolean;
  /** The server would refuse it: too short, or very weak. */
  refused: boolean;
}

export const LABELS = ["Very weak", "Weak", "Fair", "Strong", "Very strong"];

type Checker = (password: string, userInputs: string[]) => { score: number; feedback: { warning: string | null; suggestions: string[] } };

let checker: Promise<Checker> | null = null;

function loadChecker(): Promise<Checker> {
  checker ??= import("./passwordcheck").then((module) => module.check);
  return checker;
}

/** Combine the length rule with a zxcvbn-style result into what the form shows. */
export function summarise(password: string, score: number, warning: string | null, suggestions: string[]): Strength {
  const tooShort = password.length < MIN_PASSWORD_LENGTH;
  const capped = tooShort ? Math.min(score, 1) : score;
  const weak = !tooShort && capped < MIN_PASSWORD_SCORE;
  const advice = warning || suggestions[0] || (capped < 3 ? "Add more words or characters." : "");
  const hint = tooShort
    ? `Use at least ${MIN_PASSWORD_LENGTH} characters.`
    : weak
      ? `The gateway refuses a password this easy to guess. ${advice}`.trim()
      : advice;
  return { score: capped, label: LABELS[capped], hint, tooShort, refused: tooShort || weak };
}

/** How strong `password` is, considering the username and display name too. */
export async function strength(password: string, userInputs: string[] = []): Promise<Strength> {
  const check = await loadChecker();
  const result = check(password, userInputs.filter(Boolean));
  return summarise(password, result.score, result.feedback.warning, result.feedback.suggestions);
}
