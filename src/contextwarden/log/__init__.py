"""The log: what happened in a session, kept append-only.

The event types, their one versioned JSON codec, and the stores (memory, JSONL, SQLite, PostgreSQL).
"""
