"""The audit log: the hash-chained writer, searches over it, and the tamper check."""
