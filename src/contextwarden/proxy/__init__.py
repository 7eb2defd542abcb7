"""``contextwarden proxy``: the context manager in front of any agent, over HTTP (see docs/proxy.md).

Needs the ``proxy`` extra (Starlette, uvicorn, prometheus-client)::

    from contextwarden.proxy import Proxy, ProxySettings

    proxy = Proxy(ProxySettings(mode="observe", store_url="postgresql://..."))
    uvicorn.run(proxy.app, host="127.0.0.1", port=8787)

The parts: :mod:`.app` (the ASGI edge, fail-open), :mod:`.pipeline` (identify, ingest, project,
record), :mod:`.identity` (which session a request belongs to), :mod:`.bodyedit` (minimal edits in
the client's own bytes), :mod:`.tee` (reading a stream as it passes), :mod:`.ledger` and
:mod:`.accounting` (the money), :mod:`.metrics` (Prometheus), :mod:`.policy` (the task preset it
plans under), :mod:`.budget` (a weighted-token budget per task), :mod:`.failures` (the failure
taxonomy over its sessions), and the test double
:mod:`.scripted` (a provider that bills with the prompt-cache rules, and with ``strict=True`` refuses
what the provider would, :mod:`._validate`) with :mod:`.serve`. For real agent CLIs:
:mod:`.agentscript` (a scripted agent that plays the model's tool calls), :mod:`.agenttask` (the long
coding task in each client's tools), :mod:`.agentcli` (running Claude Code or Codex against a base URL)
and :mod:`.conformance` (one arm of the task through the proxy, and its checks).
"""

from __future__ import annotations

try:
    import starlette  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("the proxy needs its extra: pip install 'contextwarden[proxy]'") from exc

from ._reply import Reply
from .app import Proxy
from .ledger import Ledger, LedgerRow
from .scripted import ScriptedUpstream
from .serve import BackgroundServer
from .settings import ProxySettings

__all__ = ["BackgroundServer", "Ledger", "LedgerRow", "Proxy", "ProxySettings", "Reply", "ScriptedUpstream"]
