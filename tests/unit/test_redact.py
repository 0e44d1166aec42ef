"""Secrets are masked in events and output before anything stores or prints them, and
nothing but free text is ever masked: identifiers, paths and the envelope stay whole."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from event_samples import full, kinds
from swell.engine.visit.output_log import HEAD_CHARS, ROW_CHARS, TAIL_CHARS, VisitOutput
from swell.events import models as ev
from swell.events.bus import EventBus
from swell.events.redact import LONGEST_HOLD, MASK, MaskedStream, Redactor
from swell.runtime import new_run_id
from swell.store.memory import MemoryStore

TOKEN = "s3cr3t-value-of-a-token"
GITHUB = "ghp_" + "a1B2" * 9
ANTHROPIC = "sk-ant-api03-" + "Qx7_k2" * 8


def test_environment_secrets_are_masked_by_name() -> None:
    redactor = Redactor.from_environ(
        {"MY_API_KEY": TOKEN, "HOME": "/home/someone-long", "DEBUG_TOKEN": "1", "PATH": "/bin"}
    )
    assert redactor.text(f"curl -H 'x: {TOKEN}'") == f"curl -H 'x: {MASK}'"
    assert redactor.text("/home/someone-long") == "/home/someone-long"  # not a secret name
    assert redactor.text("1 2 3") == "1 2 3"  # too short to mask


def test_known_shapes_are_masked_without_being_known() -> None:
    redactor = Redactor()
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIabc\n-----END RSA PRIVATE KEY-----"
    text = f"token {GITHUB} key {ANTHROPIC} aws AKIAABCDEFGHIJKLMNOP\n{pem}\nend"
    assert redactor.text(text) == f"token {MASK} key {MASK} aws {MASK}\n{MASK}\nend"
    assert redactor.text(f"Bearer={ANTHROPIC}.") == f"Bearer={MASK}."


def test_a_shape_inside_an_identifier_is_not_a_key() -> None:
    """A key shape starts where no identifier goes on: a run id of a pipeline named
    `plan-task` holds `sk-2026...`, a name may end in `ghp` or `AKIA`."""
    redactor = Redactor()
    ids = [
        "plan-task-20261127-172006-e25e17d5",
        "my_ghp_" + "a" * 36,
        "build-glpat-" + "b" * 24,
        "x-AKIAABCDEFGHIJKLMNOP",
        "AKIAABCDEFGHIJKLMNOPQRS",  # too long to be an AWS key id
        "dexoxb-" + "1" * 20,
        "fooAIza" + "c" * 35,
    ]
    for ident in ids:
        line = f"run {ident} finished; see .swell/runs/{ident}/log"
        assert redactor.text(line) == line


def test_events_are_copied_with_their_free_text_masked() -> None:
    redactor = Redactor([TOKEN])
    finished = ev.StepFinished(
        run_id="r", step_id="s", visit=1, outcome="failure", error=f"auth {TOKEN} refused"
    )
    review = ev.ReviewCompleted(
        run_id="r",
        step_id="s",
        visit=1,
        index=0,
        reviewer="rev",
        issues=[ev.ReviewIssue(severity="major", detail=f"leaks {TOKEN}")],
    )
    plain = ev.StepStarted(run_id="r", step_id="s", visit=1, kind="command", detail="make")
    out = redactor.events([finished, review, plain])
    assert out[0].error == f"auth {MASK} refused"  # type: ignore[attr-defined]
    assert out[1].issues[0].detail == f"leaks {MASK}"  # type: ignore[attr-defined]
    assert out[2] is plain
    assert finished.error == f"auth {TOKEN} refused"  # the original is left alone


def test_only_free_text_is_masked() -> None:
    """A secret's value in an identifier, a key or a path is not touched: only text
    people and programs wrote is (a run id that looked like a key lost its events)."""
    redactor = Redactor([TOKEN])
    events = [
        ev.ArtifactWritten(
            run_id=TOKEN, step_id=TOKEN, name=TOKEN, path=f"/w/{TOKEN}", sha256=TOKEN, size=1
        ),
        ev.RoundRecorded(
            run_id=TOKEN, round=1, role=TOKEN, content=TOKEN, metadata={TOKEN: [TOKEN]}
        ),
    ]
    out = redactor.events(events)
    assert out[0] is events[0]
    assert (out[1].run_id, out[1].role) == (TOKEN, TOKEN)  # type: ignore[attr-defined]
    assert out[1].content == MASK  # type: ignore[attr-defined]
    assert out[1].metadata == {TOKEN: [MASK]}  # type: ignore[attr-defined]


def test_every_string_field_is_free_text_or_named_here() -> None:
    """A new field is a decision: free text (masked) or an identifier (never touched)."""
    identifiers = {
        "pipeline", "parent_run_id", "parent_step_id", "workspace", "interrupted_steps",
        "gates", "source_step", "kind", "persona", "adapter", "model", "thread", "role",
        "requested", "session_id", "contract_type", "verdict", "for_step", "reviewer",
        "feedback_path", "file", "path", "summarizer", "target", "key", "name", "sha256",
        "artifact_type", "child_run_id", "gate_type", "deadline", "default", "choice", "by",
        "host", "commit", "tree", "parent", "checkpoint", "origin_run_id", "at_step",
        "fork_run_id", "abandoned", "call_id", "remote",
    }  # fmt: skip
    found = set()
    for model in [*kinds(), ev.ReviewIssue, ev.ReviewFeedback, ev.GateChoiceInfo]:
        text = set(ev.text_fields(model))
        for name, info in model.model_fields.items():
            if name in ev.ENVELOPE or name in text or "str" not in repr(info.annotation):
                continue
            if "Literal" not in repr(info.annotation):
                found.add(name)
    assert found == identifiers


# ------------------------------------------------------------- a property of ids

NAME_PARTS = ["plan", "ta", "sk", "ghp", "_", "-", "glpat", "AKIA", "xoxb", "AIza", "ant", "a"]
names = st.lists(st.sampled_from(NAME_PARTS), min_size=1, max_size=12).map("".join)


def _with_ids(model: BaseModel, ident: str, text: str) -> Any:
    """`model` with every identifier in it (nested ones and dict keys too) set to
    `ident`, and its free text to `text`."""
    free = ev.text_fields(type(model))
    update = {
        name: _fill(value, ident, text, name in free)
        for name, value in model.__dict__.items()
        if name != "type"
    }
    return model.model_copy(update=update)


def _fill(value: Any, ident: str, text: str, free: bool) -> Any:
    if isinstance(value, BaseModel):
        return _with_ids(value, ident, text)
    if isinstance(value, list):
        return [_fill(v, ident, text, free) for v in value]
    if isinstance(value, dict) and value and all(isinstance(v, str) for v in value.values()):
        return dict.fromkeys([ident], text if free else ident)  # a dict of strings only
    if isinstance(value, dict):
        return dict.fromkeys([ident], _fill(list(value.values()), ident, text, free))
    if isinstance(value, str):
        return text if free else ident
    return value


def _identifiers(model: BaseModel) -> list[str]:
    """Every string of `model` that is not free text (dict keys included)."""
    free = ev.text_fields(type(model))
    found: list[str] = []

    def walk(value: Any, text: bool) -> None:
        if isinstance(value, BaseModel):
            found.extend(_identifiers(value))
        elif isinstance(value, list):
            for v in value:
                walk(v, text)
        elif isinstance(value, dict):
            found.extend(value)
            for v in value.values():
                walk(v, text)
        elif isinstance(value, str) and not text:
            found.append(value)

    for name, value in model.__dict__.items():
        if name != "type":
            walk(value, name in free)
    return found


@settings(max_examples=60, deadline=None, derandomize=True)
@given(name=names)
def test_redaction_never_touches_an_identifier(name: str) -> None:
    run_id = new_run_id(name)
    redactor = Redactor([TOKEN])
    text = f"{run_id}: {TOKEN} {ANTHROPIC}"
    events = [_with_ids(full(kind), run_id, text) for kind in kinds()]
    for event in redactor.events(events):
        assert set(_identifiers(event)) == {run_id}, event
        assert TOKEN not in event.model_dump_json() and ANTHROPIC not in event.model_dump_json()


@settings(max_examples=30, deadline=None, derandomize=True)
@given(name=names)
def test_a_run_keeps_its_id_through_redaction_and_the_store(name: str) -> None:
    run_id = new_run_id(name)
    store = MemoryStore()
    store.create_run(run_id=run_id, pipeline=name, input_text=f"fix {run_id}", workspace="/w")
    log = f".swell/runs/{run_id}/hello/1/output.log"
    batch: list[ev.BaseEvent] = [
        ev.RunStarted(pipeline=name, input=f"fix {run_id}"),
        ev.StepQueued(step_id="hello", reason="entry"),
        ev.StepStarted(step_id="hello", visit=1, kind="command", detail=f"echo {TOKEN}"),
        ev.ArtifactWritten(step_id="hello", visit=1, name="log", path=log, sha256="0", size=1),
        ev.StepFinished(step_id="hello", visit=1, outcome="success", output_tail=ANTHROPIC),
        ev.RunFinished(status="succeeded", visits=1),
    ]
    for seq, event in enumerate(batch, start=1):
        event.run_id, event.seq, event.ts = run_id, seq, ev.now_iso()
    EventBus(store, redact=Redactor([TOKEN]).events).emit(batch)
    run = store.get_run(run_id)
    assert (run.id, run.status, run.visits) == (run_id, "succeeded", 1)
    stored = store.events(run_id)
    assert [e.run_id for e in stored] == [run_id] * len(batch)
    assert [getattr(e, "path", None) for e in stored][3] == log
    assert [getattr(e, "output_tail", None) for e in stored][4] == MASK


# ----------------------------------------------------------------------- streams


def _streamed(redactor: Redactor, pieces: list[str]) -> str:
    """What a stream printed in `pieces` reads as once masked piece by piece."""
    stream = MaskedStream(redactor)
    shown = [stream.feed(piece) for piece in pieces]
    assert len(stream.held) <= LONGEST_HOLD
    return "".join(shown) + stream.end()


STREAM_PARTS = [
    TOKEN, GITHUB, ANTHROPIC, "AKIAABCDEFGHIJKLMNOP", "plan-task-20261127-172006-e25e17d5",
    "-----BEGIN PRIVATE KEY-----\nMIIab\ncd\n-----END PRIVATE KEY-----", "sk", "s", "g",
    "ghp_", "-----BEG", "s3cr3t", " ", "\n", "word", "=", "x" * 40, "_", "ta", "A", "KIA",
]  # fmt: skip


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    parts=st.lists(st.sampled_from(STREAM_PARTS), max_size=30),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=8),
)
def test_a_stream_masked_in_pieces_reads_as_masked_whole(parts: list[str], cuts: list[int]) -> None:
    """However output is cut into writes, the secrets in it are masked as if it had
    been printed at once."""
    redactor = Redactor([TOKEN])
    whole = "".join(parts)
    points = sorted({min(c, len(whole)) for c in cuts})
    pieces = [whole[a:b] for a, b in zip([0, *points], [*points, len(whole)], strict=True)]
    assert _streamed(redactor, pieces) == redactor.text(whole)


def test_output_ending_in_a_newline_holds_nothing_back() -> None:
    for text in ("building task sk-ant-\nok\n", "50% done", f"{TOKEN[:5]}.\n"):
        assert MaskedStream(Redactor([TOKEN])).feed(text) == text
    stream = MaskedStream(Redactor([TOKEN]))
    assert stream.feed(f"key {ANTHROPIC[:30]}") == "key "  # may be a key still printing
    assert stream.feed(f"{ANTHROPIC[30:]} and {TOKEN[:5]}") == f"{MASK} and "
    assert stream.end() == TOKEN[:5]


def _visit(redactor: Redactor, writes: list[str]) -> MemoryStore:
    """A visit that printed `writes`, each stored as the timer would store it."""
    store = MemoryStore()
    out = VisitOutput(store, "r", "s", 1, redactor)
    for text in writes:
        out.feed("stdout", text.encode())
        out.flush()
    out.close()
    return store


def test_a_secret_across_rows_or_writes_is_masked_and_nothing_is_lost() -> None:
    redactor = Redactor([TOKEN])
    pad = "x" * (ROW_CHARS - 7)  # the secret straddles the end of the first row
    for writes in (
        [f"{pad}{TOKEN}\nend {TOKEN}"],  # one write, ending in a secret
        [f"{pad}{TOKEN[:7]}", f"{TOKEN[7:]}\nend {TOKEN}"],  # two writes
    ):
        chunks = _visit(redactor, writes).output("r")
        assert "".join(c.text for c in chunks) == f"{pad}{MASK}\nend {MASK}"
        for chunk in chunks:
            assert TOKEN[:7] not in chunk.text and TOKEN[7:] not in chunk.text
            assert len(chunk.text) <= ROW_CHARS


def test_a_flood_is_masked_before_its_middle_is_left_out() -> None:
    """Leaving out the middle of a flood cuts its text: never through a secret."""
    for pad in range(len(TOKEN)):  # one of these cuts through a secret
        store = MemoryStore()
        out = VisitOutput(store, "r", "s", 1, Redactor([TOKEN]))
        lines = f"{'y' * pad}{TOKEN}\n" * 1000
        for _ in range(60):  # 1.4 MB or more, between two writes
            out.feed("stdout", lines)
        out.close()
        text = "".join(c.text for c in store.output("r"))
        assert len(text) <= HEAD_CHARS + TAIL_CHARS + ROW_CHARS
        # what is not a whole mask is a piece of one, where the middle was left out
        rest = text.replace(MASK, "").replace("y", "").replace("\n", "")
        assert len(rest) < 2 * len(MASK) and set(rest) <= set(MASK)
