"""Framework adapters: contextwarden deciding what a framework's model sees, in a few lines each.

One module per framework, each behind its own optional extra, each a thin shell over
:mod:`contextwarden.mirror`, :class:`~contextwarden.assemble.manager.ContextManager` and :mod:`contextwarden.wire`:

- :mod:`.langchain` — ``ContextWardenMiddleware`` for ``create_agent`` (``contextwarden[langchain]``);
- :mod:`.openai_agents` — ``ContextWardenFilter`` and ``ContextWardenSession`` (``contextwarden[openai-agents]``);
- :mod:`.pydantic_ai` — the ``ContextWarden`` capability (``contextwarden[pydantic-ai]``);
- :mod:`.google_adk` — ``ContextWardenCallback`` for ``before_model_callback`` (``contextwarden[google-adk]``).

Import the module you need; this package imports no framework.
"""
