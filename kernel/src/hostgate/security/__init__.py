"""Secret box, password hashing, tokens, rate limits and tickets."""
