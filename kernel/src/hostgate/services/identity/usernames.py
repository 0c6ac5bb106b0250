"""Usernames that cannot pass for someone else's.

Every new account name (local, or created by LDAP, OIDC or another login pack) goes
through here:

- **Uniqueness** compares ``username_key``: the name in Unicode NFKC, case-folded
  (``ＡDMIN``, ``Admin`` and ``admin`` are one name; ``ß`` and ``ss`` too).
- **Invisible and direction characters** are refused: format characters (zero-width
  spaces and joiners, ``U+202E`` and the other bidirectional controls, soft hyphen),
  control characters, unassigned or private-use code points, separators, and the
  blank "letters" that render as nothing (Hangul fillers, braille blank, variation
  selectors).
- **Mixed scripts** are refused: the letters of one name come from one script (Latin,
  Cyrillic, Greek...), so a Cyrillic ``а`` cannot stand in for a Latin ``a`` in
  ``аdmin``. Digits and punctuation belong to every script; Han, Hiragana and
  Katakana mix (Japanese), as do Han and Hangul (Korean). A name written wholly in
  another script (all-Cyrillic ``асе`` beside Latin ``ace``) stays possible: telling
  those apart needs the Unicode confusables table, which the kernel does not ship.

Existing accounts are not re-checked: their names keep working, and lookups try the
key they were stored under (the lower-cased name) as well as the new one.
"""

from __future__ import annotations

import unicodedata

from ...errors import InvalidInput

BLANK_LETTERS = frozenset(
    "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180e\u180f\u2800\u3164\uffa0"
)
"""Code points outside the format category that still render as nothing."""
REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"})
# scripts that one name may mix (the first word of the character's Unicode name)
MIXES = (frozenset({"CJK", "HIRAGANA", "KATAKANA"}), frozenset({"CJK", "HANGUL"}))


def username_key(username: str) -> str:
    """What uniqueness compares: NFKC, case-folded, NFKC again (Unicode's NFKC_Casefold)."""
    folded = unicodedata.normalize("NFKC", username).casefold()
    return unicodedata.normalize("NFKC", folded)


def lookup_keys(username: str) -> list[str]:
    """The keys an existing account named ``username`` may be stored under.

    The current key, and the lower-cased name older releases stored (the same for
    plain ASCII names).
    """
    name = username.strip()
    return list(dict.fromkeys((username_key(name), name.lower())))


def invisible(character: str) -> bool:
    """True for a character that shows nothing or reorders text around it."""
    if character in BLANK_LETTERS:
        return True
    if "\ufe00" <= character <= "\ufe0f" or "\U000e0100" <= character <= "\U000e01ef":
        return True  # variation selectors
    return unicodedata.category(character) in REFUSED_CATEGORIES


def script(character: str) -> str | None:
    """The script of a letter (first word of its Unicode name); None for any other character."""
    if not unicodedata.category(character).startswith("L"):
        return None
    name = unicodedata.name(character, "")
    return name.split(" ", 1)[0] if name else None


def mixed_scripts(username: str) -> set[str] | None:
    """The scripts of a name whose letters mix scripts that do not go together, else None."""
    # compatibility forms (fullwidth, mathematical letters) count as their script
    scripts = {s for s in map(script, unicodedata.normalize("NFKC", username)) if s is not None}
    if len(scripts) <= 1 or any(scripts <= allowed for allowed in MIXES):
        return None
    return scripts


def problem(username: str) -> str | None:
    """Why ``username`` cannot name a new account (its characters only), or None."""
    for character in username:
        if invisible(character):
            return (
                f"username must not contain invisible or text-direction characters "
                f"(U+{ord(character):04X})"
            )
    scripts = mixed_scripts(username)
    if scripts is not None:
        named = ", ".join(sorted(s.title() for s in scripts))
        return f"username must not mix letters of several scripts ({named})"
    return None


def check_new_username(username: str) -> str:
    """``username`` when it may name a new account; InvalidInput saying why otherwise."""
    reason = problem(username)
    if reason is not None:
        raise InvalidInput(reason)
    return username


def clean_external(username: str) -> str:
    """A name from an identity provider made fit for an account, or ``""`` when it cannot be.

    Invisible and direction characters are removed (as control characters always
    were); a name that still mixes scripts is given up, and the caller names the
    account after the provider's id instead.
    """
    kept = "".join(c for c in username if not invisible(c) or c == " ").strip()
    kept = " ".join(kept.split())
    if problem(kept.replace(" ", "")) is not None:
        return ""
    return kept
