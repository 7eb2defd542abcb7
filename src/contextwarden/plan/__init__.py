"""The plan: when to reduce the window and how much, knowing what the cache costs.

The planner, the policy a build runs under and its task presets, the session tree's spend limit, tool
exposure, the seams compaction calls back through, and compaction.
"""
