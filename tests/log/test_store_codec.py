"""The event codec: strict both ways, lossless for hard text, and one format for files and stores."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
import time
import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_store import one_of_each

from contextwarden.errors import CodecError
from contextwarden.log.codec import EVENT_SCHEMA_VERSION, dumps_event, event_from_dict, event_to_dict, loads_event
from contextwarden.log.events import (
    AssistantMessage,
    BinaryPart,
    SettingChange,
    ToolCall,
    ToolResult,
    ToolSetChange,
    UserMessage,
    new_event_id,
    with_position,
)

# every code point, lone surrogates and NUL among them
hard_text = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF))


@given(text=hard_text, key=hard_text)
def test_hard_text_round_trips_in_both_spellings(text: str, key: str) -> None:
    event = ToolResult(call_id=key, tool_name="bash", output=text, parts=(BinaryPart(media_type="x/y", data=b"\0"),))
    for ascii_only in (False, True):
        line = dumps_event(event, ascii_only=ascii_only)
        assert "\n" not in line and (line.isascii() or not ascii_only)
        assert loads_event(line) == event
        assert loads_event(line.encode("utf-8")) == event  # lone surrogates are escaped, so the line is UTF-8


def test_every_kind_round_trips_and_the_two_writers_agree() -> None:
    for event in one_of_each():
        line = dumps_event(event)
        assert loads_event(line) == event
        assert json.loads(line) == json.loads(json.dumps(event_to_dict(event)))
        assert list(json.loads(line))[:2] == ["kind", "schema"] and json.loads(line)["schema"] == EVENT_SCHEMA_VERSION


def test_values_json_cannot_hold_are_refused_by_field() -> None:
    for bad, what in (
        ({"when": datetime.datetime(2026, 1, 1)}, "datetime"),
        ({"ids": {1, 2}}, "set"),
        ({"id": uuid.UUID(int=1)}, "UUID"),
        ({"raw": b"x"}, "bytes"),
        ({1: "int key"}, "key 1"),
    ):
        with pytest.raises(CodecError, match=f"setting.settings: .*{what}"):
            dumps_event(SettingChange(settings=bad))  # type: ignore[arg-type]
    with pytest.raises(CodecError, match="tool_calls: expected ToolCall, got dict"):
        dumps_event(AssistantMessage(tool_calls=({"id": "c"},)))  # type: ignore[arg-type]
    with pytest.raises(CodecError, match=r"user.parts.data: expected bytes, got str"):
        dumps_event(UserMessage(text="x", parts=(BinaryPart(media_type="a/b", data="text"),)))  # type: ignore[arg-type]


def test_values_only_stdlib_json_writes_faithfully_survive() -> None:
    call = ToolCall(id="c", name="n", arguments={"nan": math.nan, "inf": -math.inf, "big": 2**80, "neg": -(2**70)})
    back = loads_event(dumps_event(AssistantMessage(tool_calls=(call,))))
    args: dict[str, Any] = back.tool_calls[0].arguments  # type: ignore[attr-defined]
    assert math.isnan(args["nan"]) and args["inf"] == -math.inf and args["big"] == 2**80 and args["neg"] == -(2**70)


class _Path(str):
    """A str subclass, as a caller's own types may be."""


class _Tone(str, enum.Enum):
    WARM = "warm"


def test_str_subclasses_and_enums_write_as_their_value() -> None:
    event = SettingChange(model=_Path("m"), settings={"tone": _Tone.WARM, "path": _Path("a/b")})
    assert loads_event(dumps_event(event)) == SettingChange(
        id=event.id, created_at=event.created_at, model="m", settings={"tone": "warm", "path": "a/b"}
    )


def test_unknown_and_missing_are_named_on_read() -> None:
    good = json.loads(dumps_event(ToolSetChange(exposed=("a", "b"))))
    with pytest.raises(CodecError, match=r"unknown event kind 'nope'; known kinds: \['assistant'"):
        event_from_dict({**good, "kind": "nope"})
    with pytest.raises(CodecError, match=r"tool_set event: unknown field\(s\) \['extra'\]"):
        event_from_dict({**good, "extra": 1})
    with pytest.raises(CodecError, match=r"tool_set event: missing field\(s\) \['exposed'\]"):
        event_from_dict({k: v for k, v in good.items() if k != "exposed"})
    with pytest.raises(CodecError, match=r"tool_set.exposed: expected a list, got str"):
        event_from_dict({**good, "exposed": "a"})
    call = json.loads(dumps_event(AssistantMessage(tool_calls=(ToolCall(id="c", name="n"),))))
    call["tool_calls"][0]["colour"] = "red"
    with pytest.raises(CodecError, match=r"assistant.tool_calls\[0\]: unknown field\(s\) \['colour'\]"):
        event_from_dict(call)
    part = json.loads(dumps_event(UserMessage(text="x", parts=(BinaryPart(media_type="a/b", data=b"x"),))))
    part["parts"][0]["data"] = "not base64!"
    with pytest.raises(CodecError, match=r"user.parts\[0\].data: invalid base64"):
        event_from_dict(part)
    with pytest.raises(CodecError, match="invalid JSON"):
        loads_event('{"kind": "user"')


def test_new_event_ids_are_uuid7_in_creation_order() -> None:
    ids = [new_event_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids) and all(len(i) == 32 for i in ids)
    assert {uuid.UUID(i).version for i in ids} == {7}
    millis = [int(i[:12], 16) for i in ids]
    assert millis == sorted(millis) and abs(millis[0] - time.time() * 1000) < 60_000


def test_with_position_is_dataclasses_replace() -> None:
    for event in one_of_each():
        placed = with_position(event, session_id="s", seq=7)
        assert placed == dataclasses.replace(event, session_id="s", seq=7) and placed is not event
        assert (event.session_id, event.seq) == ("", 0)
