"""The recorder files each answer once it is sent; a slow client holds up only its own session."""

from __future__ import annotations

import threading

from contextwarden.proxy.recorder import Recorder, Sent


def test_an_answer_still_being_sent_holds_up_no_other_session() -> None:
    recorder = Recorder(1)
    filed: list[str] = []
    try:
        slow, quick = Sent(), Sent()
        recorder.after(slow, "slow", filed.append, "slow turn")
        recorder.after(quick, "quick", filed.append, "quick turn")
        quick.set()
        recorder.submit("quick", lambda: None).result()
        assert filed == ["quick turn"]  # one thread, yet the unsent answer did not block it
        slow.set()
        recorder.settle()
        assert filed == ["quick turn", "slow turn"]
    finally:
        recorder.close()


def test_settle_waits_for_answers_being_sent_up_to_its_timeout() -> None:
    recorder = Recorder(2)
    filed: list[str] = []
    try:
        sent = Sent()
        recorder.after(sent, "s", filed.append, "turn")
        recorder.settle(timeout=0.05)  # the answer is still going out: settle does not wait forever
        assert filed == []
        threading.Timer(0.05, sent.set).start()
        recorder.settle()
        assert filed == ["turn"]
        recorder.after(sent, "s", filed.append, "already sent")  # an answer already out is filed at once
        recorder.settle()
        assert filed == ["turn", "already sent"]
    finally:
        recorder.close()


def test_a_session_keeps_one_thread_and_its_order() -> None:
    recorder = Recorder(4)
    seen: dict[str, list[tuple[str, int]]] = {}
    try:
        for n in range(20):
            for session in ("a", "b", "c", "d", "e"):
                recorder.submit(
                    session,
                    lambda s=session, k=n: seen.setdefault(s, []).append((threading.current_thread().name, k)),
                )
        recorder.settle()
    finally:
        recorder.close()
    threads = set()
    for calls in seen.values():
        assert [k for _, k in calls] == list(range(20))
        assert len({name for name, _ in calls}) == 1
        threads.add(calls[0][0])
    assert len(threads) > 1  # the sessions are spread over the threads
