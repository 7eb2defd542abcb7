"""Tool policies: normalizer → truncation at ingestion → retention → resource identity.

- :mod:`.normalize`: strip ANSI, collapse progress bars and repeated lines (or only sanitize).
- :mod:`.truncate`: bound an output once, keeping head, tail and error lines, with a marker.
- :mod:`.resources`: which file, URL, test target, search or page a call reads, writes or runs.
- :mod:`.presets`: :class:`ToolPolicy`, :func:`policy_for` and the coding/research/browser presets.
- :mod:`.placeholders`: the one-line texts that replace masked, superseded and stale results.
"""

from __future__ import annotations

from .normalize import NormalizedOutput, normalize_output, sanitize_output
from .placeholders import (
    extract_sources,
    masked_placeholder,
    render_call,
    stale_placeholder,
    superseded_placeholder,
)
from .presets import (
    BROWSER_TOOL_POLICIES,
    CODING_TOOL_POLICIES,
    DEFAULT_TOOL_POLICY,
    RESEARCH_TOOL_POLICIES,
    TOOL_POLICY_PRESETS,
    ToolPolicy,
    apply_policy,
    policy_for,
    policy_text,
    tool_policy_preset,
)
from .resources import (
    Resource,
    affects,
    classify_command,
    command_of,
    covers,
    normalize_path,
    normalize_url,
    opened_file,
    resources_of,
)
from .truncate import Truncation, line_count, truncate_output

__all__ = [
    "BROWSER_TOOL_POLICIES",
    "CODING_TOOL_POLICIES",
    "DEFAULT_TOOL_POLICY",
    "RESEARCH_TOOL_POLICIES",
    "TOOL_POLICY_PRESETS",
    "NormalizedOutput",
    "Resource",
    "ToolPolicy",
    "Truncation",
    "affects",
    "apply_policy",
    "classify_command",
    "command_of",
    "covers",
    "extract_sources",
    "line_count",
    "masked_placeholder",
    "normalize_output",
    "normalize_path",
    "normalize_url",
    "opened_file",
    "policy_for",
    "policy_text",
    "render_call",
    "resources_of",
    "sanitize_output",
    "stale_placeholder",
    "superseded_placeholder",
    "tool_policy_preset",
    "truncate_output",
]
