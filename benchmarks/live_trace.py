"""Where the pages' CPU goes per event: a summary of a trace taken with
`Browser.start_tracing` (benchmarks/web_live_latency.py with LIVE_BENCH_TRACE=FILE).
The trace covers the whole browser (every page's renderer, the browser and GPU
processes); the figures are per page and per event (all pages' time divided by both).

Thread times (`tdur`: CPU, not wall time) of the top-level tasks of each kind of
thread, and on the pages' main threads what the tasks did (each trace event's own time, its
children's taken off; an event dispatch by its DOM event type, a function call by its
name), each divided by the events sent.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

CATEGORIES = [
    "toplevel",
    "devtools.timeline",
    "disabled-by-default-devtools.timeline",
    "blink",
    "v8.execute",
    "loading",
    "cc",
    "gpu",
    "viz",
    "ipc",
    "mojom",
    "netlog",
    "__metadata",
]


def _names(events: list[dict[str, Any]]) -> tuple[dict[int, str], dict[tuple[int, int], str]]:
    procs: dict[int, str] = {}
    threads: dict[tuple[int, int], str] = {}
    for e in events:
        if e.get("ph") != "M":
            continue
        name = e.get("args", {}).get("name", "")
        if e.get("name") == "process_name":
            procs[e["pid"]] = name
        elif e.get("name") == "thread_name":
            threads[(e["pid"], e["tid"])] = name
    return procs, threads


def _label(e: dict[str, Any]) -> str:
    data = e.get("args", {}).get("data", {})
    if e["name"] == "EventDispatch":
        return f"EventDispatch {data.get('type', '')}"
    if e["name"] == "FunctionCall":
        return f"FunctionCall {data.get('functionName', '') or '(anonymous)'}"
    return str(e["name"])


def _kind(names: set[str]) -> str:
    """What a main-thread task was for, from the names of what ran inside it."""
    if "ProxyMain::BeginMainFrame" in names:
        return "frames (style, layout, paint)"
    if names & {"FunctionCall fromWorker", "FunctionCall (anonymous)"}:
        return "stream messages (receive, parse, log lines)"
    if "FunctionCall flush" in names:
        return "batched patches"
    if names & {"FunctionCall tick", "FunctionCall relativeTimes"}:
        return "timers (durations, bars)"
    return "other (IPC, loading, GC, microtasks)"


def summary(path: Path, events_sent: int, pages: int) -> list[str]:
    """Lines: ms of CPU per page per event by thread, then by main-thread activity."""
    events = json.loads(path.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    procs, threads = _names(events)
    complete = [e for e in events if e.get("ph") == "X" and "tdur" in e]
    by_thread: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)
    for e in complete:
        by_thread[(e["pid"], e["tid"])].append(e)
    per_thread: dict[str, float] = defaultdict(float)
    main_work: dict[str, float] = defaultdict(float)  # self time (children's taken off)
    kinds: dict[str, float] = defaultdict(float)
    kinds_of: list[tuple[dict[str, Any], set[str]]] = []
    observed: list[tuple[dict[str, Any], float]] = []  # (task, the observers' ms in it)
    observers = 0.0
    for key, found in by_thread.items():
        found.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
        stack: list[dict[str, Any]] = []
        where = f"{procs.get(key[0], key[0])} / {threads.get(key, key[1])}"
        is_main = threads.get(key) == "CrRendererMain"
        inside: set[str] = set()
        for e in found:
            while stack and stack[-1]["ts"] + stack[-1].get("dur", 0) <= e["ts"]:
                stack.pop()
            if not stack:
                per_thread[where] += e["tdur"] / 1000
                if is_main:
                    inside = set()  # the new task's; filled below, read at the end
                    kinds_of.append((e, inside))
            elif is_main:
                inside.add(_label(e))
                if _label(e).startswith("FunctionCall MutationObserver"):
                    observers += e["tdur"] / 1000  # not the page's: taken off its task
                    observed.append((kinds_of[-1][0], e["tdur"] / 1000))
            if is_main:
                main_work[_label(e)] += e["tdur"] / 1000
                if stack:
                    main_work[_label(stack[-1])] -= e["tdur"] / 1000
            stack.append(e)
    taken = defaultdict(float)
    for task, ms in observed:
        taken[id(task)] += ms
    for task, inside in kinds_of:
        kinds[_kind(inside)] += task["tdur"] / 1000 - taken[id(task)]
    kinds["the benchmark's MutationObservers"] = observers
    per = events_sent * pages
    lines = [
        f"  CPU per page per event by thread (a trace of the browser): {sum(per_thread.values()) / per:.2f} ms"
    ]
    for where, ms in sorted(per_thread.items(), key=lambda kv: -kv[1])[:8]:
        lines.append(f"    {ms / per:6.2f} ms  {where}")
    lines.append("  a page's main thread per event, by what its tasks were for:")
    for what, ms in sorted(kinds.items(), key=lambda kv: -kv[1]):
        lines.append(f"    {ms / per:6.2f} ms  {what}")
    lines.append("  a page's main thread per event, by what its tasks did (self time):")
    for what, ms in sorted(main_work.items(), key=lambda kv: -kv[1])[:10]:
        lines.append(f"    {ms / per:6.2f} ms  {what}")
    return lines
