"""The window: a session's events become context items, one event at a time.

Tool policies (normalize, truncate, retain), tiers, the lifecycle of tool results, the derived
task state, token accounting, the pool of edits the planner may make, and the window a
compaction opens.
"""
