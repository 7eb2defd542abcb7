"""Body addressing: a body read with its list's byte offsets is what json.loads reads, or nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contextwarden.wire import AddressedBody, address_body, extend_body


def _messages(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for k in range(n):
        role = "user" if k % 2 == 0 else "assistant"
        out.append({"role": role, "content": [{"type": "text", "text": f'{role} {k}: naïve café → ✓ \\ "q"'}]})
    return out


def _body(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 64, "messages": messages, "system": [{"type": "text", "text": "be terse"}]}


STYLES: list[dict[str, Any]] = [
    {"separators": (",", ":"), "ensure_ascii": False},
    {"separators": (",", ":"), "ensure_ascii": True},
    {},
    {"indent": 2, "ensure_ascii": False},
]


def _dump(value: Any, style: dict[str, Any]) -> bytes:
    return json.dumps(value, **style).encode("utf-8")


def _check_offsets(addressed: AddressedBody) -> None:
    items = addressed.body[addressed.key]
    assert len(addressed.starts) == len(addressed.ends) == len(items)
    for index, item in enumerate(items):
        assert json.loads(addressed.item_bytes(index)) == item


@pytest.mark.parametrize("style", range(len(STYLES)))
def test_an_addressed_body_is_what_json_loads_reads_and_each_item_is_at_its_bytes(style: int) -> None:
    raw = _dump(_body(_messages(7)), STYLES[style])
    addressed = address_body(raw, "messages")
    assert addressed is not None
    assert addressed.body == json.loads(raw)
    assert list(addressed.body) == list(json.loads(raw))  # key order too
    assert [k for k, _ in addressed.lead] == ["model", "max_tokens"]
    _check_offsets(addressed)


@pytest.mark.parametrize("style", range(len(STYLES)))
def test_a_body_that_extends_another_is_parsed_from_the_cut_and_reads_the_same(style: int) -> None:
    messages = _messages(9)
    first = address_body(_dump(_body(messages[:5]), STYLES[style]), "messages")
    assert first is not None
    raw = _dump(_body(messages), STYLES[style])
    later = extend_body(raw, first, 3)
    assert later is not None
    assert later.body == json.loads(raw) and list(later.body) == list(json.loads(raw))
    assert later.body["messages"][2] is first.body["messages"][2]  # the items before the cut are reused
    _check_offsets(later)
    again = extend_body(raw, first, 4)  # any item of the base can be the cut
    assert again is not None and again.body == later.body


def test_an_empty_list_and_a_list_last_in_the_body_are_addressed() -> None:
    for raw in (b'{"messages": []}', b'{"a":1,"messages":[{"x":1}]}', b' {"messages":[ 1 , [2] ,"3"] } \n'):
        addressed = address_body(raw, "messages")
        assert addressed is not None and addressed.body == json.loads(raw)
        _check_offsets(addressed)


def test_a_body_that_changes_before_the_cut_is_not_extended() -> None:
    messages = _messages(6)
    base = address_body(_dump(_body(messages[:4]), STYLES[0]), "messages")
    assert base is not None
    edited = [{**messages[0], "content": "another opening"}, *messages[1:]]
    assert extend_body(_dump(_body(edited), STYLES[0]), base, 3) is None
    other_model = _dump({**_body(messages), "model": "n"}, STYLES[0])
    assert extend_body(other_model, base, 3) is None
    assert extend_body(_dump(_body(messages), STYLES[0]), base, 9) is None  # no such item
    assert extend_body(_dump(_body(messages), STYLES[0]), base, -1) is None


@pytest.mark.parametrize(
    "raw",
    [
        b"[1, 2]",  # not an object
        b'{"messages": "text"}',  # not a list
        b'{"model": "m"}',  # no list
        b'{"messages": [1], "messages": [2]}',  # given twice: json.loads keeps the last
        b'{"messages": "x", "messages": [2]}',
        b'\xef\xbb\xbf{"messages": []}',  # a BOM
        '{"messages": []}'.encode("utf-16"),
        b'{"messages": [1]} {}',  # extra data
        b'{"messages": [1],}',
        b'{"messages": [1 2]}',
        b"{messages: [1]}",
        b'{"messages": [1]',
        b"",
        b"\xff\xfe\xfd",
    ],
)
def test_what_is_not_such_a_body_is_left_to_json_loads(raw: bytes) -> None:
    assert address_body(raw, "messages") is None


def test_every_truncation_of_a_body_is_refused_as_json_loads_refuses_it() -> None:
    raw = _dump(_body(_messages(4)), STYLES[0])
    base = address_body(_dump(_body(_messages(2)), STYLES[0]), "messages")
    assert base is not None
    for end in range(len(raw)):
        cut = raw[:end]
        with pytest.raises(ValueError):
            json.loads(cut)
        assert address_body(cut, "messages") is None
        assert extend_body(cut, base, 1) is None


def test_a_malformed_suffix_is_not_extended() -> None:
    base = address_body(_dump(_body(_messages(2)), STYLES[0]), "messages")
    assert base is not None
    head = base.raw[: base.ends[1]]
    for tail in (b',{"role":"user"}]', b",]}", b'],"messages":[]}', b'],"messages":"x"}', b"]}x", b',{"a":\xff}]}'):
        assert extend_body(head + tail, base, 1) is None
    assert extend_body(head + b'],"stream":true}', base, 1) is not None
