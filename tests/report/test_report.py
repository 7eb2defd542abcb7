from __future__ import annotations

import base64
import hashlib
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from contextwarden.log.events import AssistantMessage, ToolCall, ToolResult, UserMessage
from contextwarden.replay.results import FileResult, ReplayResults, RequestRecord, StrategyResult, UsageCheck
from contextwarden.report import CONTENT_SECURITY_POLICY, render_report, write_report
from contextwarden.report.html import CSS
from contextwarden.report.svg import Series, fmt_tokens, fmt_usd, line_chart, nice_ticks, stacked_area_chart

PAYLOAD = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'


def records(n: int, *, cut_every: int = 0, pinned: bool = False) -> tuple[RequestRecord, ...]:
    """A strategy's requests: growing tool output, cut back every ``cut_every`` requests (a window event)."""
    out = []
    tool = 0
    for i in range(n):
        tool += 500 + 37 * (i % 5)
        event = bool(cut_every) and i > 0 and i % cut_every == 0
        if event:
            tool = 600
        sections = {
            "system": 700,
            "tools": 900,
            "conversation": 200 + 90 * i,
            "tool_output": tool,
            "pinned": 150 if pinned else 0,
            "summary": 0,
        }
        total = sum(sections.values())
        cached = 0 if event or i == 0 else total - 500
        out.append(
            RequestRecord(
                index=i,
                at=30.0 * i,
                input_tokens=total,
                cache_read_tokens=cached,
                cache_write_tokens=0,
                output_tokens=120,
                cost_usd=(total - cached) * 2.5e-6 + cached * 1.25e-6 + 120e-5,
                messages=2 * i + 2,
                sections=sections,
                window_event=event,
                window_event_kinds=("context_edit",) if event else (),
                prefix_break=event,
                probes={"task": True, "latest_tool_result": True},
            )
        )
    return tuple(out)


def results(*, payload: str = "", n: int = 24) -> ReplayResults:
    """Three strategies on two files and one skipped peer; ``payload`` goes into every free-text field."""
    files = (f"/data/a{payload}.traj", f"/data/b{payload}.json")
    strategies = []
    for name, cut, pinned in (("raw", 0, False), (f"mask-last-n:10{payload}", 1, False), ("contextwarden", 7, True)):
        per_file = tuple(
            FileResult(
                file=f,
                name=Path(f).stem,
                requests=records(n - 5 * k, cut_every=cut, pinned=pinned),
                probe_misses={"latest_tool_result": 2} if cut == 1 else {},
                miss_examples={"latest_tool_result": f"output was {payload}"} if cut == 1 else {},
                usage=UsageCheck(
                    requests=3,
                    real_input_tokens=9000,
                    predicted_input_tokens=9100,
                    real_cache_read_tokens=4000,
                    predicted_cache_read_tokens=4096,
                    real_cost_usd=0.02,
                    predicted_cost_usd=0.021,
                )
                if name == "raw"
                else None,
                note=f"note {payload}" if pinned else "",
            )
            for k, f in enumerate(files)
        )
        strategies.append(StrategyResult(name=name, per_file=per_file))
    strategies.append(StrategyResult(name=f"peer{payload}", skipped=f"not installed {payload}"))
    return ReplayResults(
        files=files,
        strategies=tuple(strategies),
        counter="o200k_base",
        counter_exact=True,
        model=f"gpt-4o{payload}",
        cache_style="openai-auto",
        settings={"interval": payload or 30},
        notes=(f"a note {payload}",),
    )


class _Checker(HTMLParser):
    """Collects tags, attributes and text; fails on unbalanced elements."""

    VOID = frozenset({"meta", "br", "img", "input", "link", "hr", "wbr"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, f"unbalanced </{tag}> (open: {self.stack[-3:]})"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(doc: str) -> _Checker:
    checker = _Checker()
    checker.feed(doc)
    checker.close()
    assert checker.stack == [], f"unclosed elements: {checker.stack}"
    return checker


def test_report_escapes_every_field_and_has_no_active_content() -> None:
    doc = render_report(results(payload=PAYLOAD))
    checker = parse(doc)
    tags = [t for t, _ in checker.tags]
    assert "script" not in tags and "img" not in tags and "iframe" not in tags and "object" not in tags
    for tag, attrs in checker.tags:
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        assert not any(name in ("href", "src", "xlink:href", "action") for name in attrs), (tag, attrs)
    assert "<script" not in doc.lower()
    text = "".join(checker.text)
    # the payload reads as the literal text in the file names, strategy names, notes, examples, model
    assert text.count(PAYLOAD) >= 8
    assert "&lt;script&gt;window.__pwned=2&lt;/script&gt;" in doc


def test_transcript_timeline_shows_task_inputs_and_answers_escaped() -> None:
    res = results(n=3)
    events = [
        UserMessage(text=f"Fix it. {PAYLOAD}"),
        AssistantMessage(text="", tool_calls=(ToolCall(id="c1", name="bash", arguments={"command": "ls"}),)),
        ToolResult(call_id="c1", tool_name="bash", output="a.py\n" + PAYLOAD, exit_code=2),
        AssistantMessage(text=f"answer {PAYLOAD}"),
        AssistantMessage(text="x" * 1000),
    ]
    doc = render_report(res, transcripts={res.files[0]: events})
    checker = parse(doc)
    assert "script" not in [t for t, _ in checker.tags] and "img" not in [t for t, _ in checker.tags]
    text = "".join(checker.text)
    assert f"Fix it. {PAYLOAD}" in text
    assert f"bash (error) → a.py {PAYLOAD} (2 lines)" in text
    assert f"answer {PAYLOAD}" in text and "x" * 239 + "…" in text and "x" * 241 not in text
    assert doc.count("Transcript, request by request") == 1  # only the file given


def test_timeline_excerpt_collapses_only_a_head_yet_reads_as_the_whole_text_would() -> None:
    from contextwarden.report._timeline import _cut

    def whole(text: str, limit: int) -> str:
        flat = " ".join(text.split())
        return flat if len(flat) <= limit else flat[: limit - 1] + "…"

    texts = ["", "  ", "short", " a  b ", "w" * 5000, " \n" * 3000 + "late word", ("ab  " * 2000) + "end"]
    texts += ["x" * n + " y" for n in (9, 10, 11, 39, 40, 41, 159, 160, 161)]
    for text in texts:
        for limit in (1, 10, 40, 240):
            assert _cut(text, limit) == whole(text, limit), (text[:20], limit)


def test_report_declares_a_strict_content_security_policy_matching_its_stylesheet() -> None:
    doc = render_report(results())
    metas = [a for t, a in parse(doc).tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert len(metas) == 1
    policy = metas[0]["content"] or ""
    assert policy == CONTENT_SECURITY_POLICY
    assert "default-src 'none'" in policy and "script-src 'none'" in policy and "unsafe-inline" not in policy
    styles = re.findall(r"<style>(.*?)</style>", doc, re.S)
    assert styles == [CSS]
    digest = base64.b64encode(hashlib.sha256(styles[0].encode()).digest()).decode()
    assert f"style-src 'sha256-{digest}'" in policy
    assert ' style="' not in doc  # inline style attributes would be blocked by the policy


def test_report_draws_every_chart_per_file_and_marks_window_events() -> None:
    res = results()
    doc = render_report(res)
    kinds = re.findall(r'data-chart="([a-z]+)"', doc)
    assert kinds.count("input") == 2 and kinds.count("cost") == 2 and kinds.count("cached") == 2
    assert kinds.count("composition") == 2 * 3  # one per strategy that ran, per file
    markers = doc.count('class="we"')
    assert markers == sum(r.window_event for s in res.strategies for f in s.per_file for r in f.requests)
    assert markers > 0
    first_file = doc.split("<details")[1]
    compositions = first_file.split('data-chart="composition"')[1:]
    # contextwarden's composition has a pinned band; raw's does not
    assert "pinned (goal, constraints)" in compositions[2] and "pinned (goal, constraints)" not in compositions[0]
    assert compositions[2].count('class="ev"') == sum(r.window_event for r in res.strategies[2].per_file[0].requests)


def test_report_tables_hold_the_figures() -> None:
    res = results()
    text = "".join(parse(render_report(res)).text)
    raw = res.strategy("raw").figures()
    assert f"{raw['input_tokens_total']:,}" in text
    assert fmt_usd(raw["cost_usd"]) in text
    masked = res.strategies[1].figures()
    assert f"{masked['input_tokens_mean'] / raw['input_tokens_mean']:.2f}×" in text
    assert "peer skipped: not installed" in text
    assert "latest_tool_result" in text and "first miss could not see" in text
    assert "real input" in text and "9,100" in text  # the usage check
    assert "o200k_base (exact)" in text


def test_report_handles_empty_and_single_request_results(tmp_path: Path) -> None:
    empty = ReplayResults(
        files=(), strategies=(), counter="heuristic", counter_exact=False, model="m", cache_style="none"
    )
    parse(render_report(empty))
    one = ReplayResults(
        files=("f",),
        strategies=(StrategyResult(name="raw", per_file=(FileResult(file="f", name="f", requests=records(1)),)),),
        counter="heuristic",
        counter_exact=False,
        model="m",
        cache_style="none",
    )
    doc = render_report(one)
    parse(doc)
    assert "1 requests" in doc and "estimate" in doc
    target = tmp_path / "deep" / "dir" / "report.html"
    write_report(one, target)
    assert target.read_text(encoding="utf-8") == doc


def test_chart_scales_and_formats() -> None:
    assert nice_ticks(0) == [0.0, 1.0]
    ticks = nice_ticks(61_596)
    assert ticks[0] == 0 and ticks[-1] >= 61_596 and len(ticks) <= 8
    assert fmt_tokens(61_596) == "61.6K" and fmt_tokens(2_000_000) == "2M" and fmt_tokens(850) == "850"
    assert fmt_usd(0.5) == "$0.50" and fmt_usd(0.0123456) == "$0.0123" and fmt_usd(1729.4) == "$1,729.40"
    svg = line_chart(
        [Series(label="a<b", values=(1.0, 5.0, 3.0), color="#000", markers=(1,))], title="t&t", y_label="y"
    )
    assert "a&lt;b" in svg and "t&amp;t" in svg and svg.count('class="we"') == 1
    stacked = stacked_area_chart(
        [Series(label="x", values=(1.0, 2.0), color="#111"), Series(label="y", values=(3.0, 0.0), color="#222")],
        title="s",
        y_label="tokens",
        events=((1, "compaction"),),
    )
    assert stacked.count("<polygon") == 2 and stacked.count('class="ev"') == 1


@pytest.mark.parametrize("n", [2, 150, 1200])
def test_long_runs_thin_the_tooltips_but_keep_every_point(n: int) -> None:
    s = Series(label="raw", values=tuple(float(i) for i in range(n)), color="#000")
    svg = line_chart([s], title="t", y_label="y")
    points = re.search(r'<polyline class="ln" points="([^"]+)"', svg)
    assert points is not None and len(points.group(1).split()) == n
    assert svg.count('class="hit"') <= 400
