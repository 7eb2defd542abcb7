"""A small model's constrained answer with raw control characters inside its strings is still read."""

from __future__ import annotations

import pytest

from contextwarden.plan.compaction.schema import LISTS, parse_answer
from contextwarden.plan.compaction.summarizers import InvalidSummary


def test_raw_newlines_and_tabs_inside_strings_are_read_and_normalised() -> None:
    key = LISTS[0].key
    answer = '{"' + key + '": ["ran the\ttests\nagain", "fixed calc.py"]}'  # a raw tab and newline, as SmolLM2 writes
    assert parse_answer(answer) == {key: ["ran the tests again", "fixed calc.py"]}


def test_text_that_is_not_json_is_still_refused() -> None:
    with pytest.raises(InvalidSummary, match="not JSON"):
        parse_answer("In Progress: the tests")
