"""`python -m swell.notify.drain SPOOL`: deliver the hook notifications a process
left when it ended (observer.py's `hand_over`), each hook's in order, with the usual
tries; record each in the hooks log; remove the spool file when done."""

from __future__ import annotations

import json
import sys
import threading
from collections import defaultdict
from pathlib import Path
from typing import Any

from swell.manifest.wave_models import LifecycleHook
from swell.notify.deliver import Outcome, deliver
from swell.notify.observer import HookObserver


def drain(spool: Path) -> None:
    data = json.loads(spool.read_text(encoding="utf-8"))
    root, log = Path(data["root"]), Path(data["log"])
    by_hook: dict[str, list[tuple[dict[str, Any], int]]] = defaultdict(list)
    hooks: dict[str, LifecycleHook] = {}
    for item in data["items"]:
        hook = LifecycleHook.model_validate(item["hook"])
        hooks[hook.name] = hook
        by_hook[hook.name].append((item["body"], int(item.get("tried", 0))))
    recorder = HookObserver([], run_id="", pipeline="", workspace="", root=root, log=log)

    def one(hook: LifecycleHook, bodies: list[tuple[dict[str, Any], int]]) -> None:
        for body, tried in bodies:
            try:
                outcome = deliver(hook, body, root, [tried])  # the tries left, in all
            except Exception as exc:
                outcome = Outcome(False, 1, f"{exc.__class__.__name__}: {exc}")
            recorder.record(hook, body, outcome)

    threads = [
        threading.Thread(target=one, args=(hooks[name], bodies)) for name, bodies in by_hook.items()
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    spool.unlink(missing_ok=True)


if __name__ == "__main__":
    drain(Path(sys.argv[1]))
