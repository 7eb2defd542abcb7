from __future__ import annotations

import json
import random

import pytest

from contextwarden.context import ToolDefinition
from contextwarden.errors import UsageError
from contextwarden.log.codec import event_from_dict, event_to_dict
from contextwarden.log.events import ToolSetChange
from contextwarden.tools import (
    BUILTIN_TOOLS,
    DEFAULT_PHASES,
    READ_RANGE,
    RECALL,
    TOOL_CATALOG,
    ToolRegistry,
    openai_schema,
    render_tools_json,
)


class QuarterCounter:
    name = "quarter"
    exact = False

    def count(self, text: str) -> int:
        return (len(text) + 3) // 4


COUNTER = QuarterCounter()


def _spec(name: str, group: str, description: str = "") -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description=description or f"The {name} tool.",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        group=group,
    )


CODING_TOOLS = (
    _spec("read_file", "explore"),
    _spec("grep", "explore"),
    _spec("write_file", "edit"),
    _spec("apply_patch", "edit"),
    _spec("bash", "execute"),
    _spec("run_tests", "execute"),
    _spec("deploy", "release"),
    _spec("glob", "explore"),
)


@pytest.fixture
def registry() -> ToolRegistry:
    reg = ToolRegistry()
    for spec in CODING_TOOLS:
        reg.register(spec)
    return reg


def test_builtin_tools_come_first_in_the_core_group() -> None:
    reg = ToolRegistry()
    assert [s.name for s in reg.all()] == ["tool_catalog", "read_range", "recall"]
    assert all(s.group == "core" for s in BUILTIN_TOOLS)
    assert READ_RANGE.parameters["required"] == ["artifact_id", "start_line", "end_line"]
    assert RECALL.parameters["required"] == ["query"]
    assert ToolRegistry(include_builtins=False).all() == ()


def test_exposure_per_phase_is_core_plus_the_phase_groups(registry: ToolRegistry) -> None:
    assert registry.exposure("explore") == (
        "tool_catalog",
        "read_range",
        "recall",
        "read_file",
        "grep",
        "glob",
    )
    assert registry.exposure("edit") == (
        "tool_catalog",
        "read_range",
        "recall",
        "read_file",
        "grep",
        "write_file",
        "apply_patch",
        "glob",
    )
    assert "deploy" not in registry.exposure("test")
    assert "deploy" in registry.exposure("release")
    assert registry.phases() == tuple(DEFAULT_PHASES)
    with pytest.raises(UsageError, match="unknown task phase 'ship'"):
        registry.exposure("ship")


def test_exposure_order_is_registration_order_whatever_the_input_order() -> None:
    baseline = ToolRegistry()
    for spec in CODING_TOOLS:
        baseline.register(spec)
    expected = baseline.exposure("release")
    rng = random.Random(7)
    for _ in range(20):
        names = list(expected)
        rng.shuffle(names)
        assert baseline.ordered(names + names[:3]) == expected
        assert baseline.expose([], *names) == expected
    # a registry whose groups were configured in another order exposes the same list
    reordered = ToolRegistry(phases={"all": ("release", "execute", "edit", "explore")})
    for spec in CODING_TOOLS:
        reordered.register(spec)
    assert reordered.exposure("all") == expected


def test_custom_phase_map() -> None:
    reg = ToolRegistry(phases={"review": ["explore"]}, include_builtins=False)
    for spec in CODING_TOOLS:
        reg.register(spec)
    assert reg.exposure("review") == ("read_file", "grep", "glob")


def test_schema_tokens_count_the_sorted_openai_tools_json(registry: ToolRegistry) -> None:
    names = registry.exposure("explore")
    schemas = [openai_schema(registry.get(n)) for n in names]
    text = json.dumps(schemas, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert registry.schema_tokens(names, COUNTER) == COUNTER.count(text)
    assert render_tools_json(schemas) == text
    assert json.loads(text)[0] == {
        "type": "function",
        "function": {
            "name": "tool_catalog",
            "description": TOOL_CATALOG.description,
            "parameters": TOOL_CATALOG.parameters,
        },
    }
    # order of the input does not change the cost; more tools cost more; none cost nothing
    assert registry.schema_tokens(reversed(names), COUNTER) == registry.schema_tokens(names, COUNTER)
    assert registry.schema_tokens(registry.exposure("release"), COUNTER) > registry.schema_tokens(names, COUNTER)
    assert registry.schema_tokens([], COUNTER) == 0


def test_schema_text_does_not_depend_on_key_insertion_order() -> None:
    a = ToolDefinition(
        name="t",
        description="d",
        parameters={"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "integer"}}},
    )
    b = ToolDefinition(
        name="t",
        description="d",
        parameters={"properties": {"y": {"type": "integer"}, "x": {"type": "string"}}, "type": "object"},
    )
    ra, rb = ToolRegistry(include_builtins=False), ToolRegistry(include_builtins=False)
    ra.register(a)
    rb.register(b)
    assert render_tools_json(ra.schemas(["t"])) == render_tools_json(rb.schemas(["t"]))


def test_register_refuses_bad_tools(registry: ToolRegistry) -> None:
    with pytest.raises(UsageError, match="already registered"):
        registry.register(_spec("grep", "explore"))
    with pytest.raises(UsageError, match="1-64 letters"):
        registry.register(_spec("has space", "explore"))
    with pytest.raises(UsageError, match="type 'object'"):
        registry.register(ToolDefinition(name="bad", description="d", parameters={"type": "string"}))
    with pytest.raises(UsageError, match="not JSON-serialisable"):
        registry.register(
            ToolDefinition(name="bad2", description="d", parameters={"type": "object", "default": object()})
        )
    with pytest.raises(UsageError, match="no tool 'nope'"):
        registry.get("nope")
    with pytest.raises(UsageError, match="no tool 'nope'"):
        registry.ordered(["grep", "nope"])


def test_describe_tool_returns_schemas_on_demand(registry: ToolRegistry) -> None:
    assert registry.describe_tool("deploy") == openai_schema(registry.get("deploy"))
    listing = registry.describe_tool("")
    assert [t["name"] for t in listing["tools"]][:4] == ["tool_catalog", "read_range", "recall", "read_file"]
    assert {"name": "deploy", "group": "release", "description": "The deploy tool."} in listing["tools"]
    missing = registry.describe_tool("nope")
    assert missing["error"] == "no tool named 'nope'"
    assert "deploy" in missing["available"]


def test_lazy_load_adds_a_tool_in_its_stable_place(registry: ToolRegistry) -> None:
    exposed = registry.exposure("explore")
    loaded = registry.expose(exposed, "bash")
    assert loaded == ("tool_catalog", "read_range", "recall", "read_file", "grep", "bash", "glob")
    assert registry.expose(loaded, "bash") == loaded


def test_exposed_set_change_is_a_window_event(registry: ToolRegistry) -> None:
    explore = registry.exposure("explore")
    assert registry.exposed_set_change(explore, reversed(explore)) is None
    change = registry.exposed_set_change(explore, registry.exposure("edit"), reason="phase: edit")
    assert isinstance(change, ToolSetChange)
    assert change.is_window_event
    assert change.exposed == registry.exposure("edit")
    assert change.reason == "phase: edit"
    assert event_from_dict(event_to_dict(change)) == change
    # the same set sent in another order than the stable one still changes the request
    shuffled = tuple(reversed(explore))
    reorder = registry.exposed_set_change(shuffled, explore)
    assert reorder is not None and reorder.exposed == explore
    shrink = registry.exposed_set_change(registry.exposure("release"), explore)
    assert shrink is not None and shrink.exposed == explore


def test_registry_tools_go_to_build_as_they_are_and_their_groups_are_recorded_once() -> None:
    from contextwarden import ContextManager, SettingChange, UserMessage, open_store, render
    from contextwarden.assemble.buildrecord import build_settings_of
    from contextwarden.tokens import HeuristicCounter

    registry = ToolRegistry()
    for spec in CODING_TOOLS:
        registry.register(spec)
    tools = [registry.get(n) for n in registry.exposure("edit")]
    manager = ContextManager(open_store("memory:"), counter=HeuristicCounter())
    session = manager.session("s", model="gpt-4o", tools=tools, create=True)
    session.append(UserMessage(text="go"))
    first = session.build()
    session.append(UserMessage(text="again"))
    session.build()
    records = [e for e in manager.store.read("s") if isinstance(e, SettingChange)]
    assert len(records) == 1  # the group round-trips, so the second build matches the record
    recorded = build_settings_of(records[0])
    assert recorded is not None and recorded.tools == tuple(tools)
    assert {t.group for t in recorded.tools} == {"core", "explore", "edit"}
    # the model never sees the group
    body = render(first, "openai_chat")
    assert [set(t["function"]) for t in body["tools"]] == [{"name", "description", "parameters"}] * len(tools)
