"""What `swell watch` (and `swell serve`) poll: a dispatcher per work source, with the
pipeline each item goes to (the one named, or runtime.routing's choice)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from swell.errors import SwellError
from swell.service.dispatch import Dispatcher, Poller, Settings, Target
from swell.service.sources import WorkItem, open_source

if TYPE_CHECKING:
    from swell.manifest.loader import LoadedPipeline
    from swell.runtime import Runtime


def dispatchers(
    rt: Runtime,
    pipeline: str | None,
    source: str | None,
    settings: Settings,
    say: Callable[[str], None],
) -> list[Poller]:
    """The pollers of `swell watch`; SwellError when there is nothing to watch."""
    found: list[Poller] = []
    if source is not None:
        target = fixed_target(rt, pipeline) if pipeline else routed_target(rt)
        found.append(Dispatcher(rt, open_source(source, rt.project.root), target, settings, say))
    elif pipeline is not None:
        raise SwellError(f"swell watch {pipeline} needs --source URI (where items come from)")
    if any(s.active for s in rt.project.manifest.schedules):
        from swell.service.schedules import Schedules

        found.append(Schedules(rt, settings, say))
    if not found:
        raise SwellError("nothing to watch: give --source URI, or add `schedules:` to wave.yaml")
    return found


def fixed_target(rt: Runtime, name: str) -> Callable[[WorkItem], Target]:
    """Every item to pipeline `name` (checked now), unless its `input.label_filter`
    leaves the item out."""
    loaded = _checked(rt, name)
    return lambda item: _filtered(loaded, item)


def routed_target(rt: Runtime) -> Callable[[WorkItem], Target]:
    """Each item to the pipeline runtime.routing picks for its input and labels."""
    from swell.service.routing import route

    config = rt.project.manifest.runtime.routing
    if not config.rules and not config.default:
        raise SwellError("give the PIPELINE to run, or set runtime.routing.rules / default")
    loaded: dict[str, LoadedPipeline] = {}

    def target(item: WorkItem) -> Target:
        chosen = route(config, item.input, item.labels)
        if chosen.pipeline is None:
            return Target(None, chosen.why)
        if chosen.pipeline not in loaded:
            try:
                loaded[chosen.pipeline] = _checked(rt, chosen.pipeline)
            except SwellError as exc:
                return Target(None, f"{chosen.why} chose {chosen.pipeline}: {exc}")
        return _filtered(loaded[chosen.pipeline], item)

    return target


def _checked(rt: Runtime, name: str) -> LoadedPipeline:
    from swell.runtime import check_pipeline

    loaded, _ = check_pipeline(rt, name)
    return loaded


def _filtered(loaded: LoadedPipeline, item: WorkItem) -> Target:
    wanted = loaded.pipeline.input.label_filter
    if wanted and not label_filter_accepts(wanted, item):
        return Target(None, f"input.label_filter of {loaded.name} is {wanted!r}")
    return Target(loaded)


def label_filter_accepts(wanted: str, item: WorkItem) -> bool:
    """`input.label_filter`: comma-separated, any of them: a name is one of the item's
    tags (its forge labels), `key=value` one of its labels (as in Wave's
    `label_filter: "type=feature"`)."""
    for entry in (e.strip() for e in wanted.split(",")):
        key, sep, value = entry.partition("=")
        if (sep and item.labels.get(key.strip()) == value.strip()) or (
            not sep and entry in item.tags
        ):
            return True
    return False
