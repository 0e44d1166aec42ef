"""What a running visit's output recorder stores, and when (engine/output_log.py): nothing
for a quick visit, chunks every so often for a slow one, the rest at its end, a
bounded head and tail of a flood. Driven with a clock of its own and a real event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from swell.engine.visit import output_log
from swell.engine.visit.output_log import VisitOutput
from swell.events import models as ev
from swell.store.memory import MemoryStore
from swell.streaming import OutputChunk


class Recording:
    """An output sink that keeps what it was given, as the store would."""

    def __init__(self) -> None:
        self.store = MemoryStore()
        self.writes = 0

    def write_output(self, chunks: Sequence[OutputChunk]) -> None:
        self.writes += 1
        self.store.write_output(chunks)

    def drop_output(self, run_id: str, step_id: str, visit: int, seqs: range) -> None:
        self.store.drop_output(run_id, step_id, visit, seqs)

    def text(self) -> str:
        return "".join(c.text for c in self.store.output("r"))


def test_a_quick_visit_stores_nothing() -> None:
    async def visit() -> Recording:
        sink = Recording()
        out = VisitOutput(sink, "r", "s", 1)
        out.feed("stdout", b"fast\n")
        out.close()
        await asyncio.sleep(output_log.DELAY + 0.05)  # no timer is left behind
        return sink

    sink = asyncio.run(visit())
    assert sink.writes == 0 and sink.text() == ""


def test_a_slow_visit_is_stored_as_it_goes_and_the_rest_at_its_end() -> None:
    async def visit() -> tuple[Recording, str, int]:
        sink = Recording()
        out = VisitOutput(sink, "r", "s", 1)
        out.feed("stdout", b"one\n")
        await asyncio.sleep(output_log.DELAY + 0.1)
        during = sink.text()
        out.feed("stdout", "tw\xc3".encode("latin-1"))  # a character split across reads
        out.feed("stdout", b"\xa9o\n")
        out.feed("stderr", b"warn\n")
        out.close()
        return sink, during, len(sink.store.output("r"))

    sink, during, count = asyncio.run(visit())
    assert during == "one\n"
    assert sink.text() == "one\ntwé o\n".replace(" ", "") + "warn\n"
    assert [c.stream for c in sink.store.output("r")][-1] == "stderr"
    assert count == 3


def test_much_output_is_stored_early_and_kept_bounded() -> None:
    async def visit() -> Recording:
        sink = Recording()
        out = VisitOutput(sink, "r", "s", 1)
        line = "x" * 99 + "\n"
        for _ in range(output_log.EARLY_CHARS // 100 + 1):
            out.feed("stdout", line)
        assert sink.writes == 1  # past EARLY_CHARS: written at once
        for n in range(20_000):  # 2 MB more
            out.feed("stdout", f"{n:>99}\n")
            if n % 1000 == 0:
                out.flush()  # as the timer would
        out.close()
        return sink

    sink = asyncio.run(visit())
    text = sink.text()
    limit = output_log.HEAD_CHARS + output_log.TAIL_CHARS + output_log.ROW_CHARS
    assert len(text) <= limit
    assert text.startswith("x" * 99 + "\n")  # the head
    assert text.endswith(f"{19_999:>99}\n")  # the newest tail
    seqs = [c.seq for c in sink.store.output("r")]
    assert seqs == sorted(seqs) and seqs[-1] - seqs[0] + 1 > len(seqs)  # a gap: left out


def test_agent_text_and_tool_calls_go_to_the_agent_stream() -> None:
    async def visit() -> Recording:
        sink = Recording()
        out = VisitOutput(sink, "r", "s", 1)
        emitted: list[ev.BaseEvent] = []
        emit = output_log.tee_events(emitted.extend, out)
        emit([ev.AgentText(text="Hel"), ev.AgentText(text="lo")])
        emit([ev.AgentToolCall(name="Write", target="a.py"), ev.AgentUsage(output_tokens=3)])
        await asyncio.sleep(output_log.DELAY + 0.1)
        out.close()
        emit([ev.AgentText(text="after the end")])  # a helper after the step: not its output
        await asyncio.sleep(output_log.DELAY + 0.1)
        assert len(emitted) == 5
        return sink

    sink = asyncio.run(visit())
    assert sink.text() == "Hello\n· Write a.py\n"
    assert {c.stream for c in sink.store.output("r")} == {"agent"}
