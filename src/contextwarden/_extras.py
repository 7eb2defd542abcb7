"""Which ``pip install 'contextwarden[...]'`` brings a missing optional module.

One table for every optional dependency (``pyproject.toml``'s extras; a test keeps the two in step),
so a command that meets a missing module says what to install instead of reporting a bug.
"""

from __future__ import annotations

MODULE_EXTRAS = {
    "starlette": "proxy",
    "uvicorn": "proxy",
    "httptools": "proxy",
    "aiohttp": "proxy",
    "prometheus_client": "proxy",
    "anthropic": "proxy",
    "psycopg": "postgres",
    "bpe_openai": "tokenizers",
    "tiktoken": "tiktoken",
    "langchain": "langchain",
    "langchain_core": "langchain",
    "agents": "openai-agents",
    "pydantic_ai": "pydantic-ai",
    "google.adk": "google-adk",
    "openhands": "peers",
    "mcp": "mcp",
}
"""Top-level import name (``google.adk``: the package under the ``google`` namespace) -> the extra."""


def extra_for(module: str | None) -> str | None:
    """The extra that installs ``module`` (a dotted import name), or ``None`` when it is not optional."""
    if not module:
        return None
    parts = module.split(".")
    for size in (2, 1):
        found = MODULE_EXTRAS.get(".".join(parts[:size]))
        if found is not None:
            return found
    return None


def install_hint(exc: ImportError) -> str | None:
    """One line saying what to install for ``exc``, or ``None`` when it is not a missing optional module.

    An ImportError that already names the ``pip install`` (the adapters and stores raise those) is
    passed on as it is.
    """
    if "pip install 'contextwarden[" in str(exc):
        return str(exc)
    extra = extra_for(exc.name)
    if extra is None:
        return None
    return f"this needs the optional module {exc.name!r}: pip install 'contextwarden[{extra}]'"


def require(extra: str, *modules: str) -> None:
    """Import ``modules`` now, or raise an ImportError naming ``pip install 'contextwarden[extra]'``."""
    import importlib

    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ImportError(
                f"{module} is not installed; this needs the {extra} extra: pip install 'contextwarden[{extra}]'",
                name=module,
            ) from exc
