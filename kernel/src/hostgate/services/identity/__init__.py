"""Who people are: session tokens, logins, accounts, profiles, roles, TOTP, stored credentials."""
