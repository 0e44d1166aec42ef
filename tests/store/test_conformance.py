"""One suite for every store backend: each reader and writer method, the projections
events drive, the errors people see, transactions, concurrent writers and decisions
written through a second handle."""

from __future__ import annotations

import json
import os
import re
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

import pytest

from swell.errors import RunBusy, RunNotFound, RunStateError, StoreError
from swell.events import models as ev
from swell.store.protocols import Capability, Store
from swell.store.rows import Owner
from swell.threads.retrieval import retrieve

from .conftest import (
    CHOICE_DICTS,
    CHOICES,
    ISSUE,
    Backend,
    NewRun,
    Writer,
    a_round,
    cols,
    needs,
    stamp,
    started,
    wait_at,
)

# ---------------------------------------------------------------------- runs


def test_a_new_run_reads_back_pending_with_every_field(store: Store, new_run: NewRun) -> None:
    paths = {"workspace": "/ws/b1", "pipeline_path": "/p/build.yaml", "project_root": "/p"}
    new_run("b1", input_text="add a greeting", options={"auto_approve": True, "x": None}, **paths)
    run = store.get_run("b1")
    assert cols(run, "id pipeline status input") == ("b1", "build", "pending", "add a greeting")
    assert cols(run, "workspace pipeline_path project_root") == tuple(paths.values())
    assert run.options == {"auto_approve": True, "x": None}
    assert run.owner_pid == os.getpid()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", run.created_at)
    assert run.updated_at == run.created_at
    assert cols(run, "started_at finished_at error parent_run_id parent_step_id") == (None,) * 5
    assert (run.visits, run.last_seq) == (0, 0)


def test_a_runs_input_is_kept_with_its_secrets_masked(
    store: Store, new_run: NewRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every reader of the runs table (`swell list`, `status`, the dashboard) shows it
    so; a run id, even one holding a key shape, is kept as it is."""
    monkeypatch.setenv("DEPLOY_TOKEN", "tok-0123456789-abcdef")
    key = "sk-ant-api03-" + "Zp4_w8" * 7
    new_run("plan-task-20261127-172006-e25e17d5", input_text=f"use {key} tok-0123456789-abcdef")
    (run,) = store.list_runs()
    assert (run.id, run.input) == (
        "plan-task-20261127-172006-e25e17d5",
        "use [REDACTED] [REDACTED]",
    )
    assert store.get_run(run.id).input == run.input


def test_options_default_to_empty_and_each_read_is_a_copy(store: Store, new_run: NewRun) -> None:
    new_run("plain")
    assert store.get_run("plain").options == {}
    new_run("with-options", options={"tags": ["a"]})
    store.get_run("with-options").options["tags"].append("b")
    assert store.get_run("with-options").options == {"tags": ["a"]}


def test_creating_a_run_twice_is_an_error(store: Store, new_run: NewRun) -> None:
    new_run("r1", input_text="first")
    with pytest.raises(StoreError, match=r"^run r1 already exists$"):
        new_run("r1", input_text="second")
    assert [(r.id, r.input) for r in store.list_runs()] == [("r1", "first")]


def test_get_run_by_exact_id_or_unique_prefix(store: Store, new_run: NewRun) -> None:
    new_run("build-20261122-aaaa")
    new_run("test-20261122-bbbb")
    new_run("test-20261122-bbbb-2")
    assert store.get_run("build").id == "build-20261122-aaaa"
    assert store.get_run("test-20261122-bbbb").id == "test-20261122-bbbb"  # exact beats prefix
    assert store.get_run("test-20261122-bbbb-").id == "test-20261122-bbbb-2"


def test_an_ambiguous_prefix_is_an_error_listing_the_runs(store: Store, new_run: NewRun) -> None:
    new_run("build-1")
    new_run("build-2")
    with pytest.raises(RunNotFound) as found:
        store.get_run("build")
    assert str(found.value) == (
        "run id prefix 'build' matches several runs:\n  build-2  pending\n  build-1  pending"
    )
    for n in range(3, 13):
        new_run(f"build-{n}")
    with pytest.raises(RunNotFound) as found:
        store.get_run("build")
    lines = str(found.value).splitlines()
    assert len(lines) == 12 and lines[1] == "  build-12  pending" and lines[-1] == "  …"


def test_an_empty_id_names_no_run(store: Store, new_run: NewRun) -> None:
    new_run("build-1")
    with pytest.raises(RunNotFound, match=r"^give a run id, or a prefix of one"):
        store.get_run("")


def test_a_missing_run_is_an_error_naming_it(store: Store, new_run: NewRun) -> None:
    new_run("build-1")
    with pytest.raises(RunNotFound, match=r"^no run 'nope' in .+ \(see `swell list`\)$"):
        store.get_run("nope")


def test_a_prefix_is_compared_exactly_not_as_a_pattern(store: Store, new_run: NewRun) -> None:
    new_run("Build_1")
    for pattern in ("build", "B%", "Bu_ld", "_"):
        with pytest.raises(RunNotFound, match=r"^no run"):
            store.get_run(pattern)
    assert store.get_run("Build_").id == "Build_1"


def test_list_runs_newest_first_up_to_a_limit(store: Store, new_run: NewRun) -> None:
    for n in range(5):
        new_run(f"r{n}")
    assert [r.id for r in store.list_runs()] == ["r4", "r3", "r2", "r1", "r0"]
    assert [r.id for r in store.list_runs(2)] == ["r4", "r3"]
    assert store.list_runs(0) == []


def test_children_and_listing_without_them(store: Store, new_run: NewRun) -> None:
    new_run("parent")
    new_run("child-a", parent_run_id="parent", parent_step_id="sub")
    new_run("other")
    new_run("child-b", parent_run_id="parent", parent_step_id="sub")
    new_run("grandchild", parent_run_id="child-a", parent_step_id="deeper")
    assert [r.id for r in store.children("parent")] == ["child-a", "child-b"]
    assert [r.id for r in store.children("child-a")] == ["grandchild"]
    assert store.children("other") == []
    assert [r.id for r in store.list_runs(include_children=False)] == ["other", "parent"]
    assert len(store.list_runs(include_children=True)) == 5
    child = store.get_run("child-a")
    assert (child.parent_run_id, child.parent_step_id) == ("parent", "sub")


# ------------------------------------------------------------ run projections


def test_run_status_follows_its_events(store: Store, new_run: NewRun) -> None:
    w = new_run("r1")
    first = started(w)
    run = store.get_run("r1")
    assert (run.status, run.started_at, run.updated_at) == ("running", first.ts, first.ts)
    wait_at(w)
    run = store.get_run("r1")
    assert (run.status, run.started_at) == ("waiting", first.ts)
    assert run.updated_at is not None and run.updated_at > first.ts
    w.emit(ev.GateResolved(step_id="approve", visit=1, decision="approved", by="alice"))
    assert store.get_run("r1").status == "running"
    w.emit(ev.StepFinished(step_id="approve", visit=1, outcome="success"))
    (finished,) = w.emit(ev.RunFinished(status="failed", error="boom", visits=7, duration_ms=5))
    run = store.get_run("r1")
    assert (run.status, run.error) == ("failed", "boom")
    assert run.finished_at == run.updated_at == finished.ts
    assert run.visits == 7  # once a run ended, the count it reported
    assert run.last_seq == w.seq == 8
    assert run.started_at == first.ts


def test_a_resumed_run_runs_again_without_error_or_cancel(store: Store, new_run: NewRun) -> None:
    w = new_run("r1")
    first = started(w)
    w.emit(ev.RunFinished(status="interrupted", error="killed"))
    store.request_cancel("r1")
    (resumed,) = w.emit(ev.RunResumed(interrupted_steps=["implement"]))
    run = store.get_run("r1")
    assert (run.status, run.finished_at, run.error) == ("running", None, None)
    assert (run.started_at, run.updated_at) == (first.ts, resumed.ts)
    assert store.cancel_requested("r1") is False


def test_visits_of_started_finished_and_interrupted_steps(store: Store, new_run: NewRun) -> None:
    w = new_run("r1")
    started(w)
    fail = {"exit_code": 2, "error": "Error 2", "error_key": "make", "output_tail": "cc\n"}
    usage = {"tokens_in": 1200, "tokens_out": 340, "cost_usd": 0.0125, "duration_ms": 900}
    t = [
        w.emit(event)[0].ts
        for event in (
            ev.StepStarted(step_id="build", visit=1, kind="command", detail="make"),
            ev.StepStarted(step_id="agent", visit=1, kind="prompt", persona="coder", model="m"),
            ev.StepFinished(step_id="build", visit=1, outcome="failure", duration_ms=15, **fail),
            ev.StepFinished(step_id="agent", visit=1, outcome="success", **usage),
            ev.StepStarted(step_id="build", visit=2, kind="command"),
            ev.StepInterrupted(step_id="build", visit=2, reason="process killed"),
        )
    ]
    build1, agent, build2 = store.visits("r1")
    assert asdict(build1) == {
        "step_id": "build",
        "visit": 1,
        "kind": "command",
        "status": "failed",
        "outcome": "failure",
        "exit_code": 2,
        "error": "Error 2",
        "started_at": t[0],
        "finished_at": t[2],
        "duration_ms": 15,
        "tokens_in": 0,
        "tokens_out": 0,
        "cost_usd": 0.0,
        "adapter": None,
        "model": None,
    }
    assert (agent.status, agent.outcome) == ("succeeded", "success")
    assert agent.model == "m"  # a finished visit that names none keeps the started one's
    assert (agent.started_at, agent.finished_at) == (t[1], t[3])
    assert cols(agent, " ".join(usage)) == tuple(usage.values())
    assert cols(build2, "status error outcome") == ("interrupted", "process killed", None)
    assert build2.duration_ms is None
    assert (build2.started_at, build2.finished_at) == (t[4], t[5])
    assert isinstance(build2.cost_usd, float) and build2.tokens_in == 0
    # while the run goes on, its visit count is its visits finished or going on (not interrupted)
    assert store.get_run("r1").visits == 2


def test_an_agent_visits_model_and_cost_are_kept_and_summed_by_step(
    store: Store, new_run: NewRun
) -> None:
    """The model an agent visit ran on is known once it ran: its `step.finished` fills
    the visit's adapter and model; `steps` sums a step's cost and names its last model."""
    w = new_run("r1")
    started(w)
    for n, model, cost in ((1, "claude-haiku-4-5", 0.25), (2, "claude-opus-4", 1.5)):
        w.emit(ev.StepStarted(step_id="write", visit=n, kind="prompt", persona="dev"))
        w.emit(
            ev.StepFinished(
                step_id="write",
                visit=n,
                outcome="success",
                cost_usd=cost,
                adapter="claude",
                model=model,
            )
        )
    w.emit(ev.StepStarted(step_id="check", visit=1, kind="command"))
    w.emit(ev.StepFinished(step_id="check", visit=1, outcome="success", exit_code=0))
    visits = store.visits("r1")
    assert [(v.step_id, v.adapter, v.model, v.cost_usd) for v in visits] == [
        ("write", "claude", "claude-haiku-4-5", 0.25),
        ("write", "claude", "claude-opus-4", 1.5),
        ("check", None, None, 0.0),
    ]
    steps = {s.step_id: s for s in store.steps("r1")}
    assert (steps["write"].cost_usd, steps["write"].last_model) == (1.75, "claude-opus-4")
    assert (steps["check"].cost_usd, steps["check"].last_model) == (0.0, None)


def test_visits_started_together_go_by_step_then_visit(store: Store, new_run: NewRun) -> None:
    w = new_run("r1")
    w.emit(
        ev.StepStarted(step_id="lint", visit=2, kind="command"),
        ev.StepStarted(step_id="test", visit=1, kind="command"),
        ev.StepStarted(step_id="lint", visit=1, kind="command"),
        ts="2026-11-22T09:00:00.000Z",
    )
    rows = store.visits("r1")
    assert [(v.step_id, v.visit) for v in rows] == [("lint", 1), ("lint", 2), ("test", 1)]


def test_a_restarted_visit_starts_over_unknown_ones_count_not(
    store: Store, new_run: NewRun
) -> None:
    w = new_run("r1")
    w.emit(ev.StepStarted(step_id="a", visit=1, kind="command"))
    w.emit(ev.StepFinished(step_id="a", visit=1, outcome="failure", exit_code=1, error="x"))
    (again,) = w.emit(ev.StepStarted(step_id="a", visit=1, kind="command"))
    w.emit(ev.StepFinished(step_id="ghost", visit=1, outcome="success"))
    w.emit(ev.StepInterrupted(step_id="ghost", visit=2, reason="gone"))
    [row] = store.visits("r1")
    assert cols(row, "step_id status outcome exit_code error") == ("a", "running", None, None, None)
    assert (row.started_at, row.finished_at) == (again.ts, None)


def test_context_keeps_the_latest_value_of_each_key(store: Store, new_run: NewRun) -> None:
    w, other = new_run("r1"), new_run("r2")
    w.emit(
        ev.ContextSet(step_id="test", visit=1, key="passed", value="false"),
        ev.ContextSet(step_id="test", visit=1, key="coverage", value="81"),
    )
    w.emit(ev.ContextSet(step_id="test", visit=2, key="passed", value="true"))
    other.emit(ev.ContextSet(key="passed", value="other"))
    assert list(store.context("r1").items()) == [("coverage", "81"), ("passed", "true")]
    assert store.context("r2") == {"passed": "other"}
    assert store.context("missing") == {}


HOSTILE = [
    "O'Brien's \\ path C:\\x\\'",
    "'); DROP TABLE runs; --",
    "$$ %s %(x)s ? :name E'\\n'",
    "tabs\tnew\nlines\r\u00e9\u6f22\U0001f600",
]


def test_text_that_looks_like_sql_is_kept_as_it_is(store: Store, new_run: NewRun) -> None:
    """Quotes, backslashes, placeholders and non-ASCII in an event's text read back
    byte for byte, into the context table and the event log alike."""
    w = new_run("r1")
    w.emit(
        *[ev.ContextSet(step_id="s", visit=1, key=f"k{n}", value=v) for n, v in enumerate(HOSTILE)]
    )
    assert list(store.context("r1").values()) == HOSTILE
    kept = [e for e in store.events("r1") if isinstance(e, ev.ContextSet)]
    assert [e.value for e in kept] == HOSTILE
    assert [r.id for r in store.list_runs()] == ["r1"]


def test_artifacts_written_and_rewritten(store: Store, new_run: NewRun) -> None:
    w = new_run("r1")
    log = {"step_id": "build", "visit": 1, "name": "log", "path": "/ws/build.log"}
    w.emit(ev.ArtifactWritten(**log, sha256="a" * 64, size=120, artifact_type="log"))
    w.emit(ev.ArtifactWritten(name="report", path="/ws/report.md", sha256="b" * 64, size=9))
    w.emit(ev.ArtifactWritten(**log, sha256="c" * 64, size=240, artifact_type="log"))
    report = {"step_id": "", "visit": 0, "name": "report", "path": "/ws/report.md"}
    assert [asdict(a) for a in store.artifacts("r1")] == [
        {**report, "sha256": "b" * 64, "size": 9, "type": None},
        {**log, "sha256": "c" * 64, "size": 240, "type": "log"},  # rewritten: now the newest
    ]
    assert store.artifacts("r2") == []


# ---------------------------------------------------------------------- gates


def test_a_waiting_gate_and_its_resolution(store: Store, new_run: NewRun) -> None:
    w = new_run("r1")
    started(w)
    wait_at(w, choices=CHOICES, deadline="2026-11-23T00:00:00Z")
    [gate] = store.gates("r1")
    assert asdict(gate) == {
        "run_id": "r1",
        "step_id": "approve",
        "visit": 1,
        "gate_type": "approval",
        "status": "waiting",
        "message": "approve?",
        "choices": CHOICE_DICTS,
        "deadline": "2026-11-23T00:00:00Z",
        "decision": None,
        "choice": None,
        "reason": None,
        "decided_by": None,
    }
    assert store.pending_decision("r1", "approve", 1) is None  # nobody decided yet
    resolved = {"decision": "approved", "choice": "ship", "target": "deploy", "by": "me"}
    w.emit(ev.GateResolved(step_id="approve", visit=1, **resolved))
    [gate] = store.gates("r1")
    assert cols(gate, "status decision choice decided_by") == ("approved", "approved", "ship", "me")
    assert gate.reason is None


def test_ending_a_gate_visit_cancels_only_a_waiting_gate(store: Store, new_run: NewRun) -> None:
    w = new_run("r1")
    wait_at(w, "one")
    w.emit(ev.GateResolved(step_id="one", visit=1, decision="rejected", reason="no"))
    w.emit(ev.StepInterrupted(step_id="one", visit=1, reason="stop"))
    wait_at(w, "two")
    w.emit(ev.StepInterrupted(step_id="two", visit=1, reason="run cancelled"))
    gates = store.gates("r1")
    assert [(g.step_id, g.status) for g in gates] == [("one", "rejected"), ("two", "cancelled")]


def test_a_gate_row_per_visit_waiting_again_clears_decision(store: Store, new_run: NewRun) -> None:
    w = new_run("r1")
    wait_at(w, visit=1, choices=CHOICES)
    w.emit(ev.GateResolved(step_id="approve", visit=1, decision="approved", choice="rework"))
    wait_at(w, visit=2, choices=CHOICES)
    store.decide_gate("r1", None, "approved", choice="ship", by="alice")
    w.emit(ev.GateWaiting(step_id="approve", visit=2, gate_type="approval", message="again?"))
    assert [(g.visit, g.status, g.decision, g.message) for g in store.gates("r1")] == [
        (1, "approved", "approved", "approve?"),
        (2, "waiting", None, "again?"),
    ]


def test_approving_records_a_decision_for_the_run_to_pick_up(store: Store, new_run: NewRun) -> None:
    w = new_run("r1")
    wait_at(w, choices=CHOICES)
    gate = store.decide_gate("r1", None, "approved", choice="ship", by="alice")
    assert (gate.step_id, gate.visit, gate.status) == ("approve", 1, "waiting")
    assert cols(gate, "decision choice reason decided_by") == ("approved", "ship", None, "alice")
    assert store.gates("r1") == [gate]
    assert store.pending_decision("r1", "approve", 1) == gate
    assert store.pending_decision("r1", "approve", 2) is None
    assert store.pending_decision("r1", "other", 1) is None
    # the run acts on it: no longer pending, and its own `by` does not replace who decided
    w.emit(ev.GateResolved(step_id="approve", visit=1, decision="approved", choice="ship", by="x"))
    assert store.pending_decision("r1", "approve", 1) is None
    [resolved] = store.gates("r1")
    assert (resolved.status, resolved.decided_by) == ("approved", "alice")
    with pytest.raises(RunStateError, match=r"^no gate is waiting at run r1$"):
        store.decide_gate("r1", None, "approved")


def test_rejecting_records_the_reason(store: Store, new_run: NewRun) -> None:
    wait_at(new_run("r1"))
    gate = store.decide_gate("r1", "approve", "rejected", reason="not this week", by="bob")
    assert cols(gate, "decision reason choice") == ("rejected", "not this week", None)
    assert gate.decided_by == "bob"
    assert store.pending_decision("r1", "approve", 1) == gate


def test_a_choice_must_be_one_of_the_gates_choices(store: Store, new_run: NewRun) -> None:
    wait_at(new_run("r1"), choices=CHOICES)
    with pytest.raises(RunStateError) as err:
        store.decide_gate("r1", None, "approved", choice="yolo")
    assert str(err.value) == "'yolo' is not a choice of gate 'approve' (choices: ship, rework)"
    assert store.pending_decision("r1", "approve", 1) is None
    wait_at(new_run("r2"))  # a gate without choices takes any
    assert store.decide_gate("r2", None, "approved", choice="anything").choice == "anything"


def test_deciding_needs_exactly_one_waiting_gate(store: Store, new_run: NewRun) -> None:
    w = new_run("r1")
    with pytest.raises(RunStateError, match=r"^no gate is waiting at run r1$"):
        store.decide_gate("r1", None, "approved")
    with pytest.raises(RunStateError, match=r"^no gate is waiting at run missing$"):
        store.decide_gate("missing", None, "approved")
    wait_at(w, "alpha")
    wait_at(w, "beta")
    with pytest.raises(RunStateError) as err:
        store.decide_gate("r1", None, "approved")
    assert str(err.value) == "several gates are waiting (alpha, beta); name the step"
    with pytest.raises(RunStateError, match=r"^no gate is waiting at step 'gamma' of run r1$"):
        store.decide_gate("r1", "gamma", "approved")
    assert store.decide_gate("r1", "beta", "approved").step_id == "beta"
    assert store.decide_gate("r1", "alpha", "rejected").step_id == "alpha"


def test_a_decision_not_yet_picked_up_cannot_be_changed(store: Store, new_run: NewRun) -> None:
    wait_at(new_run("r1"))
    store.decide_gate("r1", None, "approved", by="alice")
    with pytest.raises(RunStateError) as err:
        store.decide_gate("r1", None, "rejected", by="bob")
    assert str(err.value) == (
        "gate 'approve' was already approved; the run has not picked the decision up yet "
        "(is it running? try `swell resume`)"
    )
    pending = store.pending_decision("r1", "approve", 1)
    assert pending is not None and (pending.decision, pending.decided_by) == ("approved", "alice")


# --------------------------------------------------------------------- rounds


def test_rounds_by_run_wide_and_by_thread_ids(store: Store, new_run: NewRun) -> None:
    w = new_run("r1")
    sent = w.emit(
        a_round(1, "impl", 1),
        a_round(2, role="lint", step_id="lint"),
        a_round(3, "impl", 2),
        a_round(4, "review", 1),
        a_round(5, "impl", 3),
    )
    assert store.round_count("r1", None) == 5
    assert [store.round_count("r1", t) for t in ("impl", "review", "nope")] == [3, 1, 0]
    assert store.round_count("r2", None) == 0
    assert [r.id for r in store.rounds_between("r1", None, 2, 4)] == [2, 3, 4]
    impl = store.rounds_between("r1", "impl", 1, 3)
    assert [(r.id, r.content) for r in impl] == [(1, "round 1"), (2, "round 3"), (3, "round 5")]
    assert {r.thread for r in impl} == {"impl"}
    assert [r.id for r in store.rounds_between("r1", "impl", 3, 10)] == [3]
    assert store.rounds_between("r1", None, 6, 9) == store.rounds_between("r1", None, 4, 2) == []
    [lint] = store.rounds_between("r1", None, 2, 2)
    assert asdict(lint) == {
        "id": 2,
        "role": "lint",
        "ts": sent[1].ts,
        "metadata": {"outcome": "success"},
        "content": "round 2",
        "thread": None,
    }


def test_round_metadata_reads_back_as_json(store: Store, new_run: NewRun) -> None:
    w = new_run("r1")
    w.emit(a_round(1, metadata={"files": ("a.py", "b.py"), "cwd": Path("/ws"), "n": {"k": None}}))
    [r] = store.rounds_between("r1", None, 1, 1)
    assert r.metadata == {"files": ["a.py", "b.py"], "cwd": "/ws", "n": {"k": None}}


def test_a_round_recorded_again_replaces_the_old_one(store: Store, new_run: NewRun) -> None:
    w = new_run("r1")
    w.emit(a_round(1, "impl", 1), a_round(2, "impl", 2))
    w.emit(a_round(1, "impl", 1, content="redo"))
    assert [r.content for r in store.rounds_between("r1", None, 1, 9)] == ["redo", "round 2"]
    w.emit(a_round(3, "impl", 2, content="moved"))  # the thread's round 2 again
    by_run = store.rounds_between("r1", None, 1, 9)
    by_thread = store.rounds_between("r1", "impl", 1, 9)
    assert [(r.id, r.content) for r in by_run] == [(1, "redo"), (3, "moved")]
    assert [(r.id, r.content) for r in by_thread] == [(1, "redo"), (2, "moved")]
    assert (store.round_count("r1", None), store.round_count("r1", "impl")) == (3, 2)


def test_paging_a_thread_shows_every_round_once(store: Store, new_run: NewRun) -> None:
    w = new_run("r1")
    w.emit(*(a_round(n, "impl", n, content=f"{n}:" + "x" * 200) for n in range(1, 41)))
    w.emit(a_round(41, "other", 1))
    page = retrieve(store, "r1", "impl", budget=1500)
    assert page.total == 40 and page.head[0].content.startswith("1:")
    seen = [r.id for r in page.head + page.tail]
    while page.load_before is not None:
        page = retrieve(store, "r1", "impl", budget=1500, before=page.load_before)
        seen += [r.id for r in page.tail]
    assert sorted(seen) == list(range(1, 41)) and len(seen) == 40


# -------------------------------------------------------------------- reviews


def test_reviews_in_the_order_they_completed(store: Store, new_run: NewRun) -> None:
    w = new_run("r1")
    review = {
        "step_id": "implement",
        "visit": 1,
        "reviewer": "critic",
        "adapter": "claude",
        "model": "sonnet",
        "verdict": "rework",
        "issues": [ISSUE],
        "suggestions": ["add a test"],
        "confidence": 0.8,
        "summary": "close",
        "error": None,
        "tokens_in": 900,
        "tokens_out": 120,
        "cost_usd": 0.004,
        "duration_ms": 2100,
        "for_step": "implement",
    }
    (done,) = w.emit(ev.ReviewCompleted(index=0, **review))
    w.emit(ev.ReviewCompleted(step_id="implement", visit=2, index=1, reviewer="x", error="late"))
    first, second = store.reviews("r1")
    assert asdict(first) == {**review, "contract": 0, "ts": done.ts}
    assert (second.contract, second.verdict, second.issues, second.suggestions) == (1, None, [], [])
    assert (second.error, second.confidence, second.cost_usd) == ("late", None, 0.0)
    assert store.reviews("r2") == []


# --------------------------------------------------------------------- events


def test_events_read_back_typed_or_raw_after_a_seq(store: Store, new_run: NewRun) -> None:
    w, other = new_run("r1"), new_run("r2")
    sent = w.emit(
        ev.RunStarted(pipeline="build", workspace="/ws"),
        ev.StepQueued(step_id="build", reason="entry"),
        ev.StepStarted(step_id="build", visit=1, kind="command"),
    )
    sent += w.emit(
        ev.RouteTaken(step_id="check", visit=1, target="build", outcome="failure"),
        ev.Warning(message="slow"),
    )
    other.emit(ev.RunStarted(pipeline="other"))
    store.emit([])
    got = store.events("r1")
    assert [type(e) for e in got] == [type(e) for e in sent]
    assert [e.model_dump() for e in got] == [e.model_dump() for e in sent]
    assert [e.seq for e in store.events("r1", after_seq=3)] == [4, 5]
    raw = store.raw_events("r1", 2)
    assert [json.loads(line) for line in raw] == [json.loads(e.model_dump_json()) for e in sent[2:]]
    assert store.events("r1", after_seq=5) == [] and store.raw_events("missing") == []
    assert [e.run_id for e in store.events("r2")] == ["r2"]
    # as stored: the envelope, and the rest as `event_data` (what `swell logs` views)
    rows = store.stored_rows("r1", 3)
    assert (
        [(r.seq, r.ts, r.type, r.step_id, r.visit) for r in rows]
        == [
            (e.seq, e.ts, e.type, e.step_id, e.visit)  # type: ignore[attr-defined]
            for e in sent[3:]
        ]
    )
    assert [json.loads(r.data) for r in rows] == [json.loads(ev.event_data(e)) for e in sent[3:]]
    assert store.stored_rows("missing") == []


def test_events_read_a_page_at_a_time(store: Store, new_run: NewRun) -> None:
    w, other = new_run("r1"), new_run("r2")
    w.emit(*[ev.Warning(message=f"w{i}") for i in range(1, 12)])
    other.emit(ev.Warning(message="other"))
    whole = store.raw_events("r1")
    pages, after = [], 0
    while page := store.raw_events("r1", after, limit=4):
        pages.append(page)
        after = json.loads(page[-1])["seq"]
    assert [len(p) for p in pages] == [4, 4, 3] and [x for p in pages for x in p] == whole
    assert [e.seq for e in store.events("r1", 9, limit=5)] == [10, 11]
    assert [r.seq for r in store.stored_rows("r1", 2, limit=2)] == [3, 4]
    assert [e.seq for e in store.events("r1", limit=None)] == list(range(1, 12))
    assert store.events("r1", limit=0) == [] and store.stored_rows("r2", 0, limit=0) == []
    # a seq no event can have, or below any: an answer, never a database error
    for absurd in (2**32, 10**20, 99999999999999999999):
        assert store.events("r1", absurd) == [] and store.raw_events("r1", absurd, limit=3) == []
        assert store.stored_rows("r1", absurd) == []
    assert [e.seq for e in store.events("r1", -(10**20), limit=1)] == [1]


def test_a_duplicate_seq_is_rejected_with_its_whole_batch(store: Store, new_run: NewRun) -> None:
    w = new_run("r1")
    started(w)  # seq 1 and 2
    before = store.raw_events("r1")
    batch = [
        stamp("r1", 3, ev.StepStarted(step_id="build", visit=1, kind="command")),
        stamp("r1", 4, ev.ContextSet(key="passed", value="true")),
        stamp("r1", 2, ev.ContextSet(key="again", value="x")),
        stamp("r1", 5, ev.RunFinished(status="failed", visits=1)),
    ]
    with pytest.raises(StoreError, match=r"^event 2 of run r1 is already stored$"):
        store.emit(batch)
    twice = [stamp("r1", 3, ev.Warning(message="a")), stamp("r1", 3, ev.Warning(message="b"))]
    with pytest.raises(StoreError, match=r"^event 3 of run r1 is already stored$"):
        store.emit(twice)
    assert store.raw_events("r1") == before
    assert store.context("r1") == {} and store.visits("r1") == []
    run = store.get_run("r1")
    assert (run.status, run.last_seq, run.finished_at) == ("running", 2, None)
    w.emit(ev.ContextSet(key="passed", value="true"))  # the writer carries on at seq 3
    assert (store.get_run("r1").last_seq, store.context("r1")) == (3, {"passed": "true"})


# ------------------------------------------------------------ cancel and claim


def test_cancel_requests(store: Store, new_run: NewRun) -> None:
    new_run("r1")
    new_run("r2")
    assert store.cancel_requested("r1") is False
    store.request_cancel("r1")
    assert (store.cancel_requested("r1"), store.cancel_requested("r2")) == (True, False)
    store.request_cancel("missing")  # nothing to cancel
    assert store.cancel_requested("missing") is False
    assert [r.id for r in store.list_runs()] == ["r2", "r1"]


def test_a_claim_records_and_holds_the_executing_process(store: Store, new_run: NewRun) -> None:
    needs(store, Capability.CLAIMS)
    new_run("r1")
    assert store.owner("r1") is None
    store.claim("r1")
    me = Owner(os.getpid(), socket.gethostname())
    assert store.owner("r1") == me
    run = store.get_run("r1")
    assert (run.owner_pid, run.owner_host) == (me.pid, me.host)
    store.claim("r1")  # claiming again what one holds is fine
    store.release("r1")
    assert store.owner("r1") is None
    assert store.get_run("r1").owner_pid == me.pid  # the last executor stays recorded
    with pytest.raises(RunNotFound):
        store.claim("missing")
    assert store.owner("missing") is None


def test_the_pipeline_text_is_kept_as_created(store: Store, new_run: NewRun) -> None:
    new_run("r1", pipeline_text="kind: WavePipeline\nsteps: []\n")
    new_run("r2")
    assert store.pipeline_text("r1") == "kind: WavePipeline\nsteps: []\n"
    assert (store.pipeline_text("r2"), store.pipeline_text("missing")) == (None, None)


# --------------------------------------------------- several handles at once


def test_decisions_through_another_handle_reach_the_first(
    backend: Backend, store: Store, new_run: NewRun
) -> None:
    w = new_run("r1")
    started(w)
    wait_at(w, choices=CHOICES)
    other = backend.open()
    assert other.get_run("r1").status == "waiting"
    assert other.decide_gate("r1", "approve", "approved", choice="ship", by="alice").visit == 1
    other.request_cancel("r1")
    decided = store.pending_decision("r1", "approve", 1)
    assert decided is not None
    assert cols(decided, "decision choice decided_by") == ("approved", "ship", "alice")
    assert store.cancel_requested("r1") is True
    w.emit(ev.GateResolved(step_id="approve", visit=1, decision="approved", choice="ship"))
    assert [g.status for g in other.gates("r1")] == ["approved"]
    assert other.events("r1")[-1].type == "gate.resolved"
    other.close()
    assert store.get_run("r1").status == "running"  # closing one handle leaves the other


def test_only_one_handle_can_claim_a_run(backend: Backend, store: Store, new_run: NewRun) -> None:
    needs(store, Capability.CLAIMS)
    new_run("r1")
    other = backend.open()
    store.claim("r1")
    with pytest.raises(
        RunBusy, match=rf"run r1 is already being executed by pid {os.getpid()} on "
    ):
        other.claim("r1")
    assert other.owner("r1") == store.owner("r1") is not None
    store.release("r1")
    other.claim("r1")  # free again
    with pytest.raises(RunBusy):
        store.claim("r1")
    other.close()  # a handle's claims end with it, as a process's end with the process
    store.claim("r1")


def test_claims_race_and_exactly_one_wins(backend: Backend, new_run: NewRun) -> None:
    needs(backend.open(), Capability.CLAIMS)
    new_run("r1")
    contenders = [backend.open() for _ in range(6)]
    barrier = threading.Barrier(len(contenders), timeout=30)

    def claim(handle: Store) -> bool:
        barrier.wait()
        try:
            handle.claim("r1")
        except RunBusy:
            return False
        return True

    with ThreadPoolExecutor(len(contenders)) as pool:
        won = list(pool.map(claim, contenders))
    assert won.count(True) == 1


def test_concurrent_writers_each_through_their_own_handle(backend: Backend) -> None:
    writers, batches = 4, 25
    handles = [backend.open() for _ in range(writers)]
    barrier = threading.Barrier(writers, timeout=30)

    def write(n: int) -> None:
        handles[n].create_run(run_id=f"run-{n}", pipeline="p", input_text="", workspace="/ws")
        w = Writer(handles[n], f"run-{n}")
        barrier.wait()  # then all write at once
        for b in range(batches):
            w.emit(
                ev.StepStarted(step_id=f"s{b}", visit=1, kind="command"),
                ev.ContextSet(step_id=f"s{b}", visit=1, key=f"k{b}", value=str(n)),
                ev.StepFinished(step_id=f"s{b}", visit=1, outcome="success"),
            )

    with ThreadPoolExecutor(writers) as pool:
        list(pool.map(write, range(writers)))  # raises what a writer raised
    reader = backend.open()
    for n in range(writers):
        run = reader.get_run(f"run-{n}")
        assert [e.seq for e in reader.events(run.id)] == list(range(1, 3 * batches + 1))
        assert (run.last_seq, run.visits) == (3 * batches, batches)
        assert set(reader.context(run.id).values()) == {str(n)}
    assert len(reader.list_runs()) == writers


def test_identity_names_the_database_not_the_handle(backend: Backend) -> None:
    """What a workspace records as its run's store (`swell clean`): the same for every
    handle on one database, and never a password."""
    first, second = backend.open(), backend.open()
    assert first.identity and first.identity == second.identity
    assert "@" not in first.identity and "password" not in first.identity
