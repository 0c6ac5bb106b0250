// The theme choices and reading a stored one (pure, for Vitest).

export type ThemeChoice = "system" | "light" | "dark";

export const THEMES: { value: ThemeChoice; label: string }[] = [
  { value: "system", label: "System" },
  { value: "light", label: "Light" },
  { value: "dark", label: "Dark" },
];

/** A stored value as a choice; anything unknown (or nothing) is "system". */
export function parseTheme(value: string | null | undefined): ThemeChoice {
  return value === "light" || value === "dark" ? value : "system";
}
