"""Delivering one notification: a command (argv, the event's JSON on stdin and in
the environment) or an HTTP POST of the JSON; each tried again with backoff."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import shlex
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from swell.manifest.wave_models import LifecycleHook
from swell.notify.limits import BUCKETS

ATTEMPTS = 4  # tries per notification
BACKOFF = 0.5  # seconds before the 2nd try; doubled before each next one
DEFAULT_TIMEOUT = {"http": 10.0, "command": 30.0, "script": 30.0}
OUTPUT_CAP = 2000  # characters of a failed command's output kept in the log
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
SIGNATURE_HEADER = "X-Wave-Signature-256"  # Wave's name (internal/hooks/webhook_runner.go)


class HookFailed(Exception):
    """One try did not deliver (the message says why)."""


@dataclass(frozen=True)
class Outcome:
    ok: bool
    attempts: int
    error: str | None = None


def timeout_of(hook: LifecycleHook) -> float:
    """The hook's `timeout` (a Go duration: `10s`, `1m30s`), else Wave's default."""
    text = (hook.timeout or "").strip()
    parts = _DURATION.findall(text)
    if parts and "".join(n + u for n, u in parts) == text:
        return sum(float(n) * _UNITS[u] for n, u in parts)
    return DEFAULT_TIMEOUT.get(hook.type, 30.0)


def deliver(
    hook: LifecycleHook,
    body: dict[str, Any],
    root: Path,
    tried: list[int] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Outcome:
    """Try the hook up to ATTEMPTS times in all, waiting BACKOFF, 2 x BACKOFF, ...
    between; `tried[0]`: the tries made so far (another process's), kept up to date."""
    tried = tried if tried is not None else [0]
    error = "not tried"
    while tried[0] < ATTEMPTS:
        if tried[0]:
            sleep(BACKOFF * 2 ** (tried[0] - 1))
        tried[0] += 1
        try:
            _once(hook, body, root)
            return Outcome(True, tried[0])
        except HookFailed as exc:
            error = str(exc)
    return Outcome(False, tried[0], error)


def _once(hook: LifecycleHook, body: dict[str, Any], root: Path) -> None:
    if hook.type == "http":
        _post(hook, body)
    else:
        _command(hook, body, root)


def _post(hook: LifecycleHook, body: dict[str, Any]) -> None:
    url = os.path.expandvars(hook.url or "")
    if not url.startswith(("http://", "https://")):
        raise HookFailed(f"url {url!r} is not an http(s) URL")
    content = json.dumps(body).encode()
    BUCKETS.take(url)  # this hook's thread waits its turn: a storm does not flood the URL
    headers = {"Content-Type": "application/json", "User-Agent": "swell-hooks/1"}
    secret = secret_for(hook.name, os.environ)
    if secret:
        headers[SIGNATURE_HEADER] = signature(secret, content)
    try:
        answer = httpx.post(url, content=content, headers=headers, timeout=timeout_of(hook))
    except httpx.HTTPError as exc:
        raise HookFailed(f"POST {url}: {exc.__class__.__name__}: {exc}") from None
    if not 200 <= answer.status_code < 300:
        raise HookFailed(f"POST {url}: HTTP {answer.status_code}")


def secret_for(name: str, env: Mapping[str, str]) -> str | None:
    """The secret HTTP hook `name` is signed with: `SWELL_HOOK_SECRET_<NAME>` (the name
    upper-cased, each character other than a letter or digit an underscore), else
    `SWELL_HOOK_SECRET`; None: sent unsigned."""
    own = "SWELL_HOOK_SECRET_" + re.sub(r"[^A-Z0-9]", "_", name.upper())
    return env.get(own) or env.get("SWELL_HOOK_SECRET") or None


def signature(secret: str, content: bytes) -> str:
    """`sha256=<hex HMAC-SHA256 of the body>`, as GitHub and Wave sign webhooks."""
    return "sha256=" + hmac.new(secret.encode(), content, hashlib.sha256).hexdigest()


def argv_of(hook: LifecycleHook) -> list[str]:
    """`command` split as a shell would split it (no shell runs it: nothing of the
    event's data is ever part of a command line); `script` runs with `sh -c`."""
    if hook.type == "script":
        return ["sh", "-c", hook.script or ""]
    try:
        argv = shlex.split(hook.command or "")
    except ValueError as exc:
        raise HookFailed(f"command {hook.command!r}: {exc}") from None
    if not argv:
        raise HookFailed("the hook has no command")
    return argv


def environment(body: dict[str, Any]) -> dict[str, str]:
    """Wave's curated environment (not the host's), with the event: WAVE_HOOK_* as
    Wave sets them, SWELL_HOOK_RUN_ID, and the whole event as SWELL_HOOK_EVENT_JSON."""
    keep = {k: os.environ[k] for k in ("HOME", "PATH", "TERM", "LANG") if k in os.environ}
    return {
        **keep,
        "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
        "WAVE_HOOK_EVENT": str(body["type"]),
        "WAVE_HOOK_PIPELINE": str(body["pipeline_id"]),
        "WAVE_HOOK_STEP_ID": str(body["step_id"]),
        "WAVE_HOOK_WORKSPACE": str(body["workspace"]),
        "SWELL_HOOK_RUN_ID": str(body["run_id"]),
        "SWELL_HOOK_EVENT_JSON": json.dumps(body),
    }


def _command(hook: LifecycleHook, body: dict[str, Any], root: Path) -> None:
    argv = argv_of(hook)
    try:
        proc = subprocess.Popen(
            argv,
            cwd=root,
            env=environment(body),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        raise HookFailed(f"{argv[0]}: {exc.strerror or exc}") from None
    try:
        out, _ = proc.communicate(json.dumps(body).encode(), timeout=timeout_of(hook))
    except subprocess.TimeoutExpired:
        _kill(proc)
        raise HookFailed(f"{argv[0]}: no answer within {timeout_of(hook):g} s") from None
    if proc.returncode != 0:
        said = out.decode("utf-8", "replace").strip()[-OUTPUT_CAP:]
        raise HookFailed(f"{argv[0]} exited with status {proc.returncode}: {said}".rstrip(": "))


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
