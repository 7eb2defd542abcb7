"""Body edits with the history addressed (byte spans, result holders, counted marks) equal the walked ones."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from contextwarden.proxy import bodyedit
from contextwarden.wire import address_body


def _result(call_id: Any, text: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": text}


def _body() -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": [_result("c0", "at the very start")]}]
    for k in range(1, 6):
        call = f"c{k}"
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": call, "name": "t", "input": {}}]})
        messages.append({"role": "user", "content": [_result(call, f"output {k} ✓"), {"type": "text", "text": "go"}]})
    messages.append({"role": "user", "content": [_result("c2", "the id again"), _result(7, "an int id")]})
    messages.append({"role": "user", "content": "go"})
    return {"model": "m", "max_tokens": 5, "messages": messages}


def _dump(body: Any, style: int) -> bytes:
    return [
        lambda b: json.dumps(b, separators=(",", ":"), ensure_ascii=False),
        lambda b: json.dumps(b, separators=(",", ":")),
        lambda b: json.dumps(b),
        lambda b: json.dumps(b, indent=1),
    ][style](body).encode()


def test_result_holders_name_every_message_holding_a_result_and_extend_from_an_offset() -> None:
    messages = _body()["messages"]
    holders = bodyedit.result_holders(messages)
    assert holders["c2"] == (4, 11) and holders["c0"] == (0,) and holders["7"] == (11,)
    assert "c9" not in holders
    split = bodyedit.result_holders(messages[5:], offset=5, into=bodyedit.result_holders(messages[:5]))
    assert split == holders


@pytest.mark.parametrize("ids", [["c2"], ["c1", "c4", "7"], ["c0"], ["missing"], []])
def test_replacing_outputs_through_the_holders_equals_walking_every_message(ids: list[str]) -> None:
    body = _body()
    client = copy.deepcopy(body)
    replacements = {i: f"[masked {i}]" for i in ids}
    walked = bodyedit.replace_tool_outputs("anthropic", body, replacements)
    held = bodyedit.replace_tool_outputs(
        "anthropic", body, replacements, holders=bodyedit.result_holders(body["messages"])
    )
    assert held.body == walked.body and held.replaced == walked.replaced
    assert body == client  # copy on write


@pytest.mark.parametrize("call_id", ["c0", "c1", "c2", "c5", "7", "missing"])
def test_a_frontier_mark_found_through_the_holders_lands_where_the_walk_puts_it(call_id: str) -> None:
    body = _body()
    holders = bodyedit.result_holders(body["messages"])
    walked, held = bodyedit.Edit(body=body), bodyedit.Edit(body=body)
    assert bodyedit.mark_before_result(walked, call_id) == bodyedit.mark_before_result(held, call_id, holders=holders)
    assert held.body == walked.body


@pytest.mark.parametrize("style", [0, 1, 2])
def test_an_addressed_edit_is_spliced_where_each_message_lies_and_equals_the_searched_splice(style: int) -> None:
    body = _body()
    raw = _dump(body, style)
    addressed = address_body(raw, "messages")
    assert addressed is not None
    searched = bodyedit.replace_tool_outputs("anthropic", body, {"c1": "[masked]", "c4": "[gone → see log]"})
    bodyedit.mark_tail(searched)
    placed = bodyedit.replace_tool_outputs("anthropic", body, {"c1": "[masked]", "c4": "[gone → see log]"})
    bodyedit.mark_tail(placed)
    placed.addressed = addressed
    out = placed.write(raw, body)
    assert out is not None and out == searched.write(raw, body)
    assert json.loads(out) == placed.body


def test_a_message_whose_bytes_repeat_is_spliced_at_its_own_place() -> None:
    body = _body()
    body["messages"].insert(1, {"role": "user", "content": "go"})  # the same bytes as the last message
    raw = _dump(body, 0)
    edit = bodyedit.Edit(body=body, addressed=address_body(raw, "messages"))
    assert bodyedit.mark_tail(edit)
    out = edit.write(raw, body)
    assert out == _dump(edit.body, 0)  # what re-serializing the whole body in the client's style gives
    assert json.loads(out)["messages"][1] == {"role": "user", "content": "go"}


def test_an_addressed_body_in_no_known_style_is_not_edited() -> None:
    body = _body()
    raw = _dump(body, 3)  # indented: no style of ours writes a message as it lies there
    edit = bodyedit.Edit(body=body, addressed=address_body(raw, "messages"))
    assert bodyedit.mark_tail(edit)
    assert edit.write(raw, body) is None


def test_counted_breakpoints_are_trusted_and_kept_up_to_date() -> None:
    body = _body()
    full = bodyedit.Edit(body=body, breakpoints=bodyedit.MAX_BREAKPOINTS)
    assert not bodyedit.mark_tail(full)
    edit = bodyedit.Edit(body=body, breakpoints=bodyedit.MAX_BREAKPOINTS - 1)
    assert bodyedit.mark_before_result(edit, "c3")
    assert edit.breakpoints == bodyedit.MAX_BREAKPOINTS
    assert not bodyedit.mark_tail(edit)  # the count the first mark left says four are in use
    counted = bodyedit.Edit(body=body)
    assert bodyedit.mark_tail(counted) and bodyedit.count_breakpoints(counted.body) == 1
    marks = bodyedit.count_message_marks(counted.body["messages"])
    assert bodyedit.count_breakpoints(counted.body, message_marks=marks) == 1
