"""Prometheus metrics of one proxy process (``GET /metrics``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

if TYPE_CHECKING:
    from .ledger import LedgerRow
    from .pipeline import Prepared


class ProxyMetrics:
    """Counters and the added-latency histogram, in a registry of their own."""

    def __init__(self) -> None:
        """Create the metrics."""
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "contextwarden_proxy_requests",
            "Model calls by format and outcome.",
            ["format", "outcome"],
            registry=self.registry,
        )
        self.fallbacks = Counter(
            "contextwarden_proxy_fallbacks",
            "Model calls forwarded unchanged after an internal failure.",
            registry=self.registry,
        )
        self.record_failures = Counter(
            "contextwarden_proxy_record_failures", "Answers that could not be recorded.", registry=self.registry
        )
        self.tokens = Counter(
            "contextwarden_proxy_tokens",
            "Input tokens as sent by clients and as forwarded.",
            ["side"],
            registry=self.registry,
        )
        self.saving = Counter(
            "contextwarden_proxy_saving_usd",
            "Estimated USD saved against the clients' own requests under the same cache rules.",
            registry=self.registry,
        )
        self.stand_ins = Counter(
            "contextwarden_proxy_model_stand_ins",
            "Model calls for a model the model table does not name, by the listed profile planned and priced for it.",
            ["model", "profile"],
            registry=self.registry,
        )
        self.added = Histogram(
            "contextwarden_proxy_added_seconds",
            "Time the proxy spent on a model call before forwarding it.",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
            registry=self.registry,
        )

    def prepared(self, prepared: Prepared) -> None:
        """Count a model call about to be forwarded."""
        self.requests.labels(prepared.fmt, prepared.outcome).inc()
        if prepared.outcome == "fallback":
            self.fallbacks.inc()
        if prepared.stand_in:
            self.stand_ins.labels(prepared.model, prepared.stand_in).inc()
        self.added.observe(prepared.added_ms / 1000)

    def accounted(self, row: LedgerRow) -> None:
        """Count the tokens and the saving of a ledger row."""
        self.tokens.labels("client").inc(row.client_tokens)
        self.tokens.labels("forwarded").inc(row.forwarded_tokens)
        effective = row.projected_cost_usd if row.mode == "observe" else row.cost_usd
        if row.status == 200 and row.client_cost_usd > effective:
            self.saving.inc(row.client_cost_usd - effective)

    def exposition(self) -> tuple[bytes, str]:
        """The metrics in Prometheus text format and its content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
