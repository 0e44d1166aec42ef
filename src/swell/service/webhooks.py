"""Inbound forge webhooks (`POST /api/hooks/{forge}`, web/hooks.py): verified, made a
work item, routed, and dispatched once per delivery.

- **Verified** with a secret from the environment: `SWELL_WEBHOOK_SECRET_<FORGE>`
  (GITHUB, GITLAB, GITEA), else `SWELL_WEBHOOK_SECRET`. GitHub signs the body
  (`X-Hub-Signature-256: sha256=HMAC-SHA256(secret, body)`), Gitea too
  (`X-Gitea-Signature`, hex), GitLab sends the secret itself (`X-Gitlab-Token`).
  No secret set, or a bad or missing signature: refused (401), nothing runs.
- **De-duplicated**: the delivery id (`X-GitHub-Delivery`, `X-Gitea-Delivery`,
  `X-Gitlab-Event-UUID`) is the dispatch key's item (source `webhook:<forge>`), so a
  delivery sent again starts nothing.
- **Normalized**: the issue's or pull request's URL is the input (else the
  repository's); labels for routing: forge, event, action, repo, kind, title, labels.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from swell.errors import SwellError
from swell.service.dispatch import NotHandedOn, Settings, record_item, start_item
from swell.service.sources import WorkItem
from swell.store.capabilities import dispatch
from swell.store.dispatch import AlreadyDispatched, DispatchKey

if TYPE_CHECKING:
    from swell.runtime import Runtime

FORGES = ("github", "gitlab", "gitea")
_DELIVERY = {
    "github": "x-github-delivery",
    "gitlab": "x-gitlab-event-uuid",
    "gitea": "x-gitea-delivery",
}
_EVENT = {"github": "x-github-event", "gitlab": "x-gitlab-event", "gitea": "x-gitea-event"}


class Refused(SwellError):
    """A delivery that is not accepted: `status` is the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Delivery:
    forge: str
    id: str
    event: str
    item: WorkItem


@dataclass(frozen=True)
class Outcome:
    """What a delivery did: the run it started (or had started: `duplicate`), or why
    none (`run_id` None)."""

    run_id: str | None
    pipeline: str | None
    why: str
    duplicate: bool = False


def secret_for(forge: str, env: Mapping[str, str]) -> str | None:
    return env.get(f"SWELL_WEBHOOK_SECRET_{forge.upper()}") or env.get("SWELL_WEBHOOK_SECRET")


def verify(forge: str, headers: Mapping[str, str], body: bytes, env: Mapping[str, str]) -> None:
    """Refused(404) for an unknown forge, Refused(401) unless the delivery carries the
    secret's signature (GitLab: the secret)."""
    if forge not in FORGES:
        raise Refused(404, f"unknown forge `{forge}` (use {', '.join(FORGES)})")
    secret = secret_for(forge, env)
    if not secret:
        raise Refused(
            401, f"webhooks need SWELL_WEBHOOK_SECRET_{forge.upper()} or SWELL_WEBHOOK_SECRET"
        )
    if forge == "gitlab":
        given = headers.get("x-gitlab-token", "")
        if not hmac.compare_digest(given.encode(), secret.encode()):
            raise Refused(401, "bad or missing X-Gitlab-Token")
        return
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    if forge == "github":
        header, expected = "x-hub-signature-256", f"sha256={digest}"
    else:
        header, expected = "x-gitea-signature", digest
    if not hmac.compare_digest(headers.get(header, "").encode(), expected.encode()):
        raise Refused(401, f"bad or missing {header} signature")


def delivery(forge: str, headers: Mapping[str, str], body: bytes) -> Delivery:
    """The verified delivery as a work item; Refused(400) when it is not one."""
    delivery_id = headers.get(_DELIVERY[forge]) or headers.get("idempotency-key")
    if not delivery_id:
        raise Refused(400, f"no delivery id ({_DELIVERY[forge]} header)")
    try:
        payload = json.loads(body or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise Refused(400, "the body is not JSON") from None
    if not isinstance(payload, dict):
        raise Refused(400, "the body is not a JSON object")
    event = headers.get(_EVENT[forge], "")
    return Delivery(forge, delivery_id, event, _item(forge, event, payload, delivery_id))


def _item(forge: str, event: str, payload: dict[str, Any], delivery_id: str) -> WorkItem:
    attrs = _dict(payload.get("object_attributes"))  # GitLab's issue / merge request
    thing = _dict(payload.get("issue")) or _dict(payload.get("pull_request")) or attrs
    kind = "pull_request" if payload.get("pull_request") or attrs.get("target_branch") else "issue"
    repo = _dict(payload.get("repository")) or _dict(payload.get("project"))
    url = thing.get("html_url") or thing.get("url") or payload.get("compare")
    url = url or repo.get("html_url") or repo.get("web_url") or ""
    names = [_label_name(x) for x in (thing.get("labels") or payload.get("labels") or [])]
    tags = tuple(n for n in names if n)
    labels = {
        "forge": forge,
        "event": event,
        "action": str(payload.get("action") or attrs.get("action") or ""),
        "repo": str(repo.get("full_name") or repo.get("path_with_namespace") or ""),
        "kind": kind if thing else event,
        "title": str(thing.get("title") or ""),
        "labels": ",".join(tags),
    }
    return WorkItem(id=delivery_id, input=str(url), labels=labels, tags=tags)


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _label_name(value: object) -> str:
    return (
        str(value.get("name") or value.get("title") or "")
        if isinstance(value, dict)
        else str(value)
    )


def dispatch_delivery(
    rt: Runtime, given: Delivery, settings: Settings | None = None, *, hand_on: bool = True
) -> Outcome:
    """Route the delivery's item and start its run, once per delivery id (`hand_on`
    False: only record it, for the caller to hand on: see `dispatch.hand_on`)."""
    from swell.service.watching import routed_target

    chosen = routed_target(rt)(given.item)
    if chosen.pipeline is None:
        return Outcome(None, None, chosen.why)
    name = chosen.pipeline.name
    key = DispatchKey(f"webhook:{given.forge}", given.id, name)
    try:
        starter = start_item if hand_on else record_item
        run_id = starter(rt, chosen.pipeline, given.item.input, key, settings or Settings())
    except NotHandedOn as exc:
        return Outcome(exc.run_id, name, str(exc))
    except AlreadyDispatched:
        rows = dispatch(rt.store).dispatched(key.source, name)
        earlier = next((r.run_id for r in rows if r.item == given.id), None)
        return Outcome(earlier, name, f"delivery {given.id} was dispatched already", True)
    return Outcome(run_id, name, f"delivery {given.id} routed to {name}")
