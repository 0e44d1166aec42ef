"""`swell bench run`: every (task, pipeline) is a swell run in a fresh checkout of the
task's repository, then graded by its diff alone (grade.py). Its records go to the
store as it goes (records.py), so a killed bench continues where it stopped."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from swell.bench.checkout import CheckoutError, Tree, make_workspace, source_repo, workspace_diff
from swell.bench.confine import Confine, grading_sandbox
from swell.bench.dataset import Dataset, DatasetError, Task
from swell.bench.grade import grade
from swell.bench.pseudo import is_pseudo, pseudo_pipeline
from swell.bench.records import BenchBook, BenchPlan, TaskRecord, task_key
from swell.engine.visit.context import RunOptions
from swell.errors import SwellError
from swell.events.statuses import ENDED_FOR_GOOD
from swell.executors.base import Started, Watch
from swell.executors.local import LocalExecutor
from swell.manifest.loader import LoadedPipeline
from swell.runtime import Runtime, check_loaded, check_pipeline

Say = Callable[[str], None]


class BenchInterrupted(Exception):
    """A task's run was interrupted (Ctrl-C, SIGTERM): the bench stops with it, its
    records kept, to continue with `--bench`."""


@dataclass
class BenchOptions:
    pipelines: list[str]
    adapter: str | None = None
    model: str | None = None
    concurrency: int = 1
    limit: int | None = None
    test_timeout: float = 600.0
    no_sandbox: bool = False


@dataclass
class _Job:
    task: Task
    index: int
    pipeline: str
    loaded: LoadedPipeline
    done: list[int] = field(default_factory=lambda: [0])


class BenchRunner:
    """Runs one bench's jobs in this process, `concurrency` at a time."""

    def __init__(self, rt: Runtime, dataset: Dataset, plan: BenchPlan, say: Say) -> None:
        self.rt, self.dataset, self.plan, self.say = rt, dataset, plan, say
        self.book = BenchBook(rt.store, plan.bench_id)
        self.scratch = rt.state_dir / "bench" / plan.bench_id
        self._cloning = threading.Lock()
        self.confine: Confine | None = None
        self._finished = 0
        self._total = 0

    def pipelines(self, options: BenchOptions) -> dict[str, LoadedPipeline]:
        """Each pipeline loaded and checked before any task runs."""
        from swell.ops import preflight

        loaded: dict[str, LoadedPipeline] = {}
        for name in options.pipelines:
            if is_pseudo(name):
                pipeline = pseudo_pipeline(name, self.rt.state_dir / "bench" / "pipelines")
                check_loaded(self.rt, pipeline)
            else:
                pipeline, _ = check_pipeline(self.rt, name)
                if is_pseudo(pipeline.name):
                    raise SwellError(f"pipeline '{name}' is named as swell bench's own; rename it")
                findings = preflight.check_run(
                    self.rt.project,
                    self.rt.registries,
                    pipeline,
                    input_text="a problem statement",
                    adapter=options.adapter,
                    model=options.model,
                )
                preflight.raise_findings(pipeline.name, findings)
            loaded[name] = pipeline
        return loaded

    async def run(self, options: BenchOptions) -> dict[str, TaskRecord]:
        loaded = self.pipelines(options)
        self.confine = grading_sandbox(self.rt.project, self.rt.state_dir, options.no_sandbox)
        self.book.put_plan(self.plan)
        kept = self.book.tasks()
        tasks = {t.instance_id: t for t in self.dataset.tasks}
        gone = [iid for iid in self.plan.tasks if iid not in tasks]
        if gone:
            raise DatasetError(f"{self.dataset.path}: no task {', '.join(gone[:5])} of the bench")
        jobs = [
            _Job(tasks[iid], index, name, loaded[name])
            for index, iid in enumerate(self.plan.tasks)
            for name in options.pipelines
        ]
        todo = [j for j in jobs if _unfinished(kept.get(task_key(j.pipeline, j.task.instance_id)))]
        self._total, self._finished = len(jobs), len(jobs) - len(todo)
        if self._finished:
            self.say(f"{self._finished} of {len(jobs)} tasks graded already; running the rest")
        self.scratch.mkdir(parents=True, exist_ok=True)
        gate = asyncio.Semaphore(max(1, options.concurrency))

        async def one(job: _Job) -> None:
            async with gate:
                previous = kept.get(task_key(job.pipeline, job.task.instance_id))
                await self._job(job, options, previous)

        await asyncio.gather(*(one(j) for j in todo))
        return self.book.tasks()

    def _tree(self, task: Task) -> Tree:
        """The task's files (held while the task runs: a big repository's are big)."""
        with self._cloning:  # one clone of a URL's mirror at a time
            repo = source_repo(
                self.dataset.repo_location(task),
                self.rt.state_dir / "bench" / "repos",
                task.base_commit,
            )
        return Tree.of(repo, task.base_commit)

    async def _job(self, job: _Job, options: BenchOptions, previous: TaskRecord | None) -> None:
        started = time.monotonic()
        task = job.task
        record = TaskRecord(instance_id=task.instance_id, pipeline=job.pipeline, index=job.index)
        try:
            tree = await asyncio.to_thread(self._tree, task)
            await self._run(job, record, tree, options, previous)
            stored = self.rt.store.get_run(record.run_id).workspace if record.run_id else None
            if stored and record.base:
                diff = await asyncio.to_thread(workspace_diff, Path(stored), record.base)
                record.patch = diff
            record.grade = await grade(
                task,
                tree,
                record.patch,
                timeout=self.plan.test_timeout,
                scratch=self.scratch,
                confine=self.confine,
            )
        except SwellError as exc:
            record.run_error = record.run_error or str(exc)
        record.status = "done"
        record.task_seconds = time.monotonic() - started
        self.book.put(record)
        self._finished += 1
        self.say(_line(record, self._finished, self._total))

    async def _run(
        self,
        job: _Job,
        record: TaskRecord,
        tree: Tree,
        options: BenchOptions,
        previous: TaskRecord | None,
    ) -> None:
        """The task's swell run: continued when a killed bench left it unfinished."""
        executor = LocalExecutor()
        started: Started | None = None
        if previous is not None and previous.run_id and previous.base:
            record.run_id, record.base = previous.run_id, previous.base
            run = self.rt.store.get_run(previous.run_id)
            if run.status in ENDED_FOR_GOOD:
                record.run_status = run.status
                return
            try:
                started = executor.resume(self.rt, run)
            except SwellError:
                started = None  # cannot be continued: a new run
        if started is None:
            run_options = RunOptions(
                auto_approve=True,
                adapter=options.adapter,
                model=options.model,
                env=self._env(job),
                no_sandbox=options.no_sandbox,
            )
            text = job.task.problem_statement
            began = time.monotonic()
            started = await executor.start(self.rt, job.loaded, text, run_options)
            record.run_seconds = time.monotonic() - began
            assert started.plan is not None
            record.run_id = started.run_id
            record.base = await asyncio.to_thread(make_workspace, tree, started.plan.workspace)
            self.book.put(record)
        began = time.monotonic()
        ending = await executor.follow(self.rt, started, Watch(stop_at_gates=True))
        if ending.status == "interrupted":
            raise BenchInterrupted(started.run_id)
        record.run_seconds += time.monotonic() - began
        record.run_status, record.run_error = ending.status, ending.error

    def _env(self, job: _Job) -> dict[str, str]:
        """What a run's templates can read as `{{ env.* }}` (the gold patch only for `gold`)."""
        env = {"SWELL_BENCH_TASK": job.task.instance_id, "SWELL_BENCH_INDEX": str(job.index)}
        if job.pipeline == "gold":
            if not job.task.patch:
                raise CheckoutError(f"task {job.task.instance_id} has no gold patch")
            path = self.scratch / "gold" / f"{job.index}.patch"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(job.task.patch, encoding="utf-8")
            env["SWELL_BENCH_GOLD_PATCH"] = str(path)
        return env


def _unfinished(record: TaskRecord | None) -> bool:
    return record is None or record.status != "done"


def _line(record: TaskRecord, finished: int, total: int) -> str:
    if record.grade is None:
        verdict = f"not graded: {record.run_error}"
    elif record.grade.resolved:
        verdict = "resolved"
    else:
        why = record.grade.error or _failing(record)
        verdict = f"not resolved ({why})"
    return (
        f"[{finished}/{total}] {record.pipeline} {record.instance_id}: {verdict}"
        f"  run {record.run_id} {record.run_status}, {record.task_seconds:.1f}s"
    )


def _failing(record: TaskRecord) -> str:
    assert record.grade is not None
    f2p = [t for t, r in record.grade.fail_to_pass.items() if r != "passed"]
    parts = []
    if f2p:
        parts.append(f"{len(f2p)} of {len(record.grade.fail_to_pass)} FAIL_TO_PASS fail")
    if record.grade.broken:
        parts.append(f"{len(record.grade.broken)} PASS_TO_PASS broken")
    return ", ".join(parts) or "tests did not run"


def plan_for(bench_id: str, dataset: Dataset, options: BenchOptions) -> BenchPlan:
    tasks = [t.instance_id for t in dataset.tasks][: options.limit]
    return BenchPlan(
        bench_id=bench_id,
        dataset=str(dataset.path.resolve()),
        tasks=tasks,
        pipelines=options.pipelines,
        adapter=options.adapter,
        model=options.model,
        test_timeout=options.test_timeout,
    )
