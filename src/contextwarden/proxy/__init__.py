"""``contextwarden proxy``: the context manager in front of any agent, over HTTP (see docs/proxy.md).

Needs the ``proxy`` extra (Starlette, uvicorn, prometheus-client)::

    from contextwarden.proxy import Proxy, ProxySettings

    proxy = Proxy(ProxySettings(mode="observe", store_url="postgresql://..."))
    uvicorn.run(proxy.app, host="127.0.0.1", port=8787)

The parts: :mod:`.app` (the ASGI edge, fail-open), :mod:`.pipeline` (identify, ingest, project,
record), :mod:`.identity` (which session a request belongs to), :mod:`.bodyedit` (minimal edits in
the client's own bytes), :mod:`.tee` (reading a stream as it passes), :mod:`.ledger` and
:mod:`.accounting` (the money), :mod:`.metrics` (Prometheus), :mod:`.policy` (the task preset it
plans under), :mod:`.spend` (a spending limit per task), :mod:`.failures` (the failure
taxonomy over its sessions), :mod:`.access` (who may read which sessions, and the store's salt),
:mod:`.viewer` (the live page), :mod:`.notices` (its one-line log notices), and the test double
:mod:`.scripted` (a provider that bills with the prompt-cache rules, and with ``strict=True`` refuses
what the provider would, :mod:`._validate`) with :mod:`.serve`, which :mod:`.demo` plays a real
transcript through. For real agent CLIs: :mod:`.agentscript` (a scripted agent that plays the model's
tool calls), :mod:`.agenttask` (the long coding task in each client's tools), :mod:`.agentcli`
(running Claude Code or Codex against a base URL) and :mod:`.conformance` (one arm of the task through
the proxy, and its checks).
"""

from __future__ import annotations

from .._extras import require

require("proxy", "starlette", "uvicorn", "prometheus_client")

from ._reply import Reply  # noqa: E402  (after the check: these import the extra's modules)
from .app import Proxy  # noqa: E402
from .ledger import Ledger, LedgerRow  # noqa: E402
from .scripted import ScriptedUpstream  # noqa: E402
from .serve import BackgroundServer  # noqa: E402
from .settings import ProxySettings  # noqa: E402

__all__ = ["BackgroundServer", "Ledger", "LedgerRow", "Proxy", "ProxySettings", "Reply", "ScriptedUpstream"]
