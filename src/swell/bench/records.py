"""What a bench keeps in the store (`Capability.BENCH`): its plan under the key `bench`,
and one record per (pipeline, task) under `task/PIPELINE/INSTANCE`, put when the task's
run starts (`running`, with its run id) and again when it is graded (`done`). A killed
bench continues from these: done tasks are not run again."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, Field

from swell.bench.grade import Grade
from swell.errors import RunNotFound
from swell.store.capabilities import bench_records
from swell.store.protocols import Store

PLAN_KEY = "bench"


class BenchNotFound(RunNotFound):
    """No bench by that id (or prefix): a 404 in the dashboard, as an unknown run."""


class BenchPlan(BaseModel):
    """What a bench runs: which dataset's tasks, with which pipelines and agents."""

    bench_id: str
    dataset: str
    tasks: list[str]  # instance ids, in dataset order (after --limit)
    pipelines: list[str]
    adapter: str | None = None
    model: str | None = None
    test_timeout: float = 600.0
    created: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))


class TaskRecord(BaseModel):
    """One task under one pipeline: its swell run and its grade."""

    instance_id: str
    pipeline: str
    index: int  # the task's place in the dataset
    status: Literal["running", "done"] = "running"
    run_id: str | None = None
    run_status: str | None = None
    run_error: str | None = None
    base: str | None = None  # the workspace's base commit
    patch: str = ""  # the workspace's diff, as graded
    grade: Grade | None = None
    run_seconds: float = 0.0  # the run (the pipeline's work)
    task_seconds: float = 0.0  # checkout, run, diff and grading

    @property
    def key(self) -> str:
        return task_key(self.pipeline, self.instance_id)

    @property
    def resolved(self) -> bool:
        return self.grade is not None and self.grade.resolved


def task_key(pipeline: str, instance_id: str) -> str:
    return f"task/{pipeline}/{instance_id}"


def new_bench_id() -> str:
    return f"bench-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


class BenchBook:
    """A bench's records in a store."""

    def __init__(self, store: Store, bench_id: str) -> None:
        self.records = bench_records(store)
        self.bench_id = bench_id

    def put_plan(self, plan: BenchPlan) -> None:
        self.records.put(self.bench_id, PLAN_KEY, plan.model_dump_json())

    def put(self, record: TaskRecord) -> None:
        self.records.put(self.bench_id, record.key, record.model_dump_json())

    def plan(self) -> BenchPlan:
        for _, key, data in self.records.records(self.bench_id):
            if key == PLAN_KEY:
                return BenchPlan.model_validate_json(data)
        raise BenchNotFound(f"no bench {self.bench_id}")

    def tasks(self) -> dict[str, TaskRecord]:
        found = {}
        for _, key, data in self.records.records(self.bench_id):
            if key.startswith("task/"):
                found[key] = TaskRecord.model_validate_json(data)
        return found


def find_bench(store: Store, prefix: str) -> str:
    """The bench id `prefix` starts (the newest when it is `latest`)."""
    ids = list(dict.fromkeys(b for b, key, _ in bench_records(store).records() if key == PLAN_KEY))
    if prefix == "latest" and ids:
        return ids[-1]
    matches = [b for b in ids if b.startswith(prefix)]
    if prefix in ids:
        return prefix
    if len(matches) == 1:
        return matches[0]
    if not matches:
        known = ", ".join(ids[-5:]) or "none yet"
        raise BenchNotFound(f"no bench '{prefix}' (newest: {known})")
    raise BenchNotFound(f"'{prefix}' names {len(matches)} benches: {', '.join(matches)}")
