"""Assembly: ``ContextManager.build`` runs the steps before it and returns a ModelContext.

Also here: build records, the session handle, subagents and the answers to retrieval calls.
"""
