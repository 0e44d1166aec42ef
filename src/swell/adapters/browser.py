"""The `browser` adapter: no model; the step's prompt is a JSON list of browser actions
(`browser_actions.py`) run in headless Chromium through Playwright.

Chromium is the machine's own (`adapters.NAME.binary`, else /usr/bin/chromium, else
`chromium` or `chromium-browser` on PATH); Playwright's downloaded browsers are never
used. Actions run in order and stop at the first that fails. The results (a JSON list,
one object per action run) are the answer: printed, and written to the step's declared
output file. Screenshots are files in the workspace, recorded as artifacts.

Every request of the browser goes through a guard (the DevTools `Fetch` domain on the
browser's own session, which, unlike Playwright's routing, also sees each redirect hop,
popups and workers): it refuses hosts off the `allowed_domains` list and redirect chains
longer than `max_redirects`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import time
from collections.abc import AsyncIterator, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from swell.adapters.base import (
    AdapterSetup,
    AgentArtifact,
    AgentEvent,
    AgentFinished,
    AgentRequest,
    AgentResult,
    AgentToolCall,
    Capabilities,
)
from swell.adapters.browser_actions import (
    Action,
    ActionListError,
    ActionResult,
    parse_actions,
    refusal,
    results_json,
    truncate,
)
from swell.errors import AgentCrashed, AgentError, AgentTimeout, BinaryMissing
from swell.workspace import safe

DEFAULT_CHROMIUM = "/usr/bin/chromium"
CHROMIUM_NAMES = ("chromium", "chromium-browser")
INSTALL_HINT = "apt-get install chromium (or set adapters.NAME.binary to a Chromium)"
PLAYWRIGHT_HINT = "pip install 'swell[browser]'"


class BrowserOptions(BaseModel):
    """`adapters.NAME.options` of a browser adapter."""

    model_config = ConfigDict(extra="forbid")

    viewport_width: int = Field(default=1280, ge=100, le=3840, description="page width (px)")
    viewport_height: int = Field(default=720, ge=100, le=2160, description="page height (px)")
    max_redirects: int = Field(
        default=10, ge=0, le=20, description="redirects one request may follow"
    )
    max_response_bytes: int = Field(
        default=5 * 1024 * 1024,
        gt=0,
        description="longest text or HTML an action returns; longer is cut and flagged",
    )
    timeout_ms: int = Field(default=30_000, gt=0, description="an action's default time limit")
    allowed_domains: list[str] = Field(
        default_factory=list,
        description="hosts the page may fetch from (`name` or `*.suffix`); empty: any",
    )
    screenshot_dir: str = Field(
        default=".agents/output/screenshots",
        description="where screenshots without a `path` go (relative to the workspace)",
    )


def find_chromium(binary: str | None, root: Path) -> str | None:
    """The Chromium to run: `binary` (a path, relative to the project root, or a name on
    PATH), else Debian's /usr/bin/chromium, else chromium on PATH."""
    if binary:
        expanded = os.path.expanduser(binary)
        if os.sep in expanded and not os.path.isabs(expanded):
            expanded = str(root / expanded)
        return shutil.which(expanded)
    if os.access(DEFAULT_CHROMIUM, os.X_OK):
        return DEFAULT_CHROMIUM
    return next((p for n in CHROMIUM_NAMES if (p := shutil.which(n))), None)


def lacking(binary: str | None, root: Path) -> tuple[str, str] | None:
    """What this machine lacks to run the browser adapter, and the fix (for `swell
    doctor`), or None."""
    if find_chromium(binary, root) is None:
        return f"`{binary or 'chromium'}` not found", INSTALL_HINT
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed", PLAYWRIGHT_HINT
    return None


def missing_parts(binary: str | None, root: Path) -> str | None:
    """`lacking` as one message for a failed step, or None."""
    found = lacking(binary, root)
    return None if found is None else f"browser adapter: {found[0]}; {found[1]}"


@dataclass
class Guard:
    """Decides every request of the browser (DevTools `Fetch.requestPaused`): refused hosts
    and over-long redirect chains fail with BlockedByClient, and the reason is kept
    so the action that caused it can say why."""

    options: BrowserOptions
    hops: dict[str, int] = field(default_factory=dict)  # request id -> redirects so far
    refused: list[str] = field(default_factory=list)
    tasks: set[asyncio.Future[None]] = field(default_factory=set)  # kept until done

    def decide(self, event: dict[str, Any]) -> str | None:
        """Why the paused request must not go on, or None."""
        url = str(event.get("request", {}).get("url", ""))
        came_from = event.get("redirectedRequestId")
        hops = self.hops.get(came_from, 0) + 1 if came_from else 0
        self.hops[str(event.get("requestId"))] = hops
        why = refusal(url, self.options.allowed_domains)
        if why is None and hops > self.options.max_redirects:
            why = f"more than max_redirects ({self.options.max_redirects}) redirects"
        if why is not None:
            self.refused.append(f"{url}: {why}")
        return why

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` beside the actions (Playwright calls listeners synchronously)."""
        task = asyncio.ensure_future(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def attach(self, browser: Any) -> None:
        """Decide every request of the browser: its pages, the pages they open, workers."""
        cdp = await browser.new_browser_cdp_session()

        async def paused(event: dict[str, Any]) -> None:
            why = self.decide(event)
            params: dict[str, Any] = {"requestId": event["requestId"]}
            method = "Fetch.continueRequest"
            if why is not None:
                method, params["errorReason"] = "Fetch.failRequest", "BlockedByClient"
            # the page may have closed meanwhile: then there is nothing left to decide
            with contextlib.suppress(Exception):
                await cdp.send(method, params)

        cdp.on("Fetch.requestPaused", lambda event: self.spawn(paused(event)))
        await cdp.send("Fetch.enable", {"patterns": [{"urlPattern": "*"}]})


@dataclass
class Session:
    """One visit's page: runs actions on it and keeps the screenshots it wrote."""

    page: Any
    guard: Guard
    options: BrowserOptions
    workspace: Path
    shots: list[AgentArtifact] = field(default_factory=list)

    async def run(self, index: int, action: Action) -> ActionResult:
        """Run one action within its time limit; every failure becomes its result."""
        from playwright.async_api import Error as PlaywrightError

        limit = action.timeout_ms or self.options.timeout_ms
        start = time.monotonic()
        seen = len(self.guard.refused)
        try:
            async with asyncio.timeout(limit / 1000 + 1):  # Playwright's own limits come first
                data = await self._do(index, action, limit)
            status, error = "success", None
        except (PlaywrightError, TimeoutError, safe.UnsafePath, ValueError) as exc:
            data, status = {}, "error"
            error = _reason(exc, limit, self.guard.refused[seen:])
        blocked = self.guard.refused[seen:]
        if blocked and status == "success":
            data["blocked"] = blocked
        ms = int((time.monotonic() - start) * 1000)
        return ActionResult(
            action=action.action, status=status, data=data, error=error, duration_ms=ms
        )

    async def _wait(self, action: Action, limit: int) -> None:
        if action.wait_for:
            await self.page.wait_for_selector(action.wait_for, state="visible", timeout=limit)

    async def _do(self, index: int, action: Action, limit: int) -> dict[str, Any]:
        page = self.page
        if action.action == "navigate":
            return await self._navigate(action, limit)
        await self._wait(action, limit)
        if action.action == "screenshot":
            return await self._screenshot(index, action, limit)
        if action.action == "click":
            await page.click(action.selector, timeout=limit)
            return {"selector": action.selector}
        if action.action == "type":
            await page.fill(action.selector, action.value, timeout=limit)
            return {"selector": action.selector, "value": action.value}
        if action.action == "get_text":
            text = await (
                page.inner_text(action.selector, timeout=limit)
                if action.selector
                else page.evaluate("document.body ? document.body.innerText : ''")
            )
            return self._sized("text", str(text))
        html = await (
            page.eval_on_selector(action.selector, "e => e.outerHTML")
            if action.selector
            else page.content()
        )
        return self._sized("html", str(html))

    async def _navigate(self, action: Action, limit: int) -> dict[str, Any]:
        url = str(action.url)
        why = refusal(url, self.options.allowed_domains)
        if why is not None:  # said plainly, before the browser turns it into a net:: error
            raise ValueError(f"{url} refused: {why}")
        response = await self.page.goto(url, timeout=limit, wait_until="load")
        # wait_for after a navigation waits on the new page, not the one it leaves
        await self._wait(action, limit)
        data: dict[str, Any] = {"title": await self.page.title(), "url": self.page.url}
        if response is not None:
            data["status"] = response.status
            data["redirects"] = _redirects(response.request)
        return data

    async def _screenshot(self, index: int, action: Action, limit: int) -> dict[str, Any]:
        kind = action.format or "png"
        rel = action.path or f"{self.options.screenshot_dir}/screenshot-{index}.{kind}"
        image = await self.page.screenshot(
            type=kind, full_page=bool(action.full_page), timeout=limit
        )
        safe.write_bytes(self.workspace, rel, image)
        name = Path(rel).stem
        self.shots.append(AgentArtifact(name=name, path=rel, type=kind))
        return {"path": rel, "format": kind, "bytes": len(image)}

    def _sized(self, key: str, text: str) -> dict[str, Any]:
        cut, truncated = truncate(text, self.options.max_response_bytes)
        data: dict[str, Any] = {key: cut}
        if truncated:
            data["truncated"] = True
            data["warning"] = f"cut to max_response_bytes ({self.options.max_response_bytes})"
        return data


def _redirects(request: Any) -> int:
    hops = 0
    while request.redirected_from is not None:
        hops, request = hops + 1, request.redirected_from
    return hops


def _reason(exc: BaseException, limit: int, refused: list[str]) -> str:
    """One line saying why an action failed: the guard's reason when it refused a
    request, else Playwright's first line (its call log is noise here)."""
    if refused and "ERR_BLOCKED_BY_CLIENT" in str(exc):
        return "refused " + "; ".join(refused)
    if isinstance(exc, TimeoutError) or type(exc).__name__ == "TimeoutError":
        return f"timed out after {limit} ms"
    return (str(exc).splitlines() or [type(exc).__name__])[0]


def _failure(results: list[ActionResult], actions: list[Action]) -> AgentError | None:
    """The error naming the first failed action, or None when all succeeded."""
    for i, (result, action) in enumerate(zip(results, actions, strict=False), start=1):
        if result.status == "error":
            target = f" {action.target()}" if action.target() else ""
            message = f"browser action {i} ({action.action}{target}) failed: {result.error}"
            timed_out = (result.error or "").startswith("timed out")
            return AgentTimeout(message) if timed_out else AgentCrashed(message)
    return None


class BrowserAdapter:
    """Runs a step's browser actions in headless Chromium."""

    Options = BrowserOptions
    name = "browser"
    env_passthrough: tuple[str, ...] = ()
    capabilities = Capabilities(raw_prompt=True, answer_fills_outputs=True)

    def __init__(self, setup: AdapterSetup) -> None:
        self.options = BrowserOptions.model_validate(setup.options)
        self.binary = setup.binary
        self.root = setup.project_root

    async def run(self, request: AgentRequest) -> AsyncIterator[AgentEvent]:
        try:
            actions = parse_actions(request.prompt)
        except ActionListError as exc:
            bad = ActionResult(action="parse", status="error", error=str(exc))
            error = AgentError(f"browser adapter: {exc}")
            yield AgentFinished(AgentResult.failed(error, text=results_json([bad])))
            return
        problem = missing_parts(self.binary, self.root)
        if problem is not None:
            yield AgentFinished(AgentResult.failed(BinaryMissing(problem)))
            return
        from playwright.async_api import Error as PlaywrightError

        results: list[ActionResult] = []
        shots: list[AgentArtifact] = []
        stopped: AgentError | None = None
        try:
            async for event in self._actions(request, actions, results, shots):
                yield event
        except TimeoutError:
            limit = request.timeout_s or 0
            stopped = AgentTimeout(f"browser actions did not finish within {limit:g}s")
        except PlaywrightError as exc:  # the browser did not start, or went away
            first = (str(exc).splitlines() or [type(exc).__name__])[0]
            stopped = AgentCrashed(f"browser adapter: chromium failed: {first}")
        text = results_json(results)
        if stopped is not None:
            yield AgentFinished(AgentResult.failed(stopped, text=text, artifacts=shots))
            return
        failure = _failure(results, actions)
        if failure is not None:
            yield AgentFinished(AgentResult.failed(failure, text=text, artifacts=shots))
            return
        yield AgentFinished(AgentResult(success=True, text=text, artifacts=shots))

    async def _actions(
        self,
        request: AgentRequest,
        actions: list[Action],
        results: list[ActionResult],
        shots: list[AgentArtifact],
    ) -> AsyncIterator[AgentEvent]:
        """Launch Chromium, run the actions until one fails; fills `results`/`shots`."""
        from playwright.async_api import async_playwright

        executable = find_chromium(self.binary, self.root)
        guard = Guard(self.options)
        # the visit's time limit, applied to each wait but never across a `yield` (the
        # consumer runs there, and a cancellation must not land in its code)
        loop = asyncio.get_running_loop()
        deadline = None if request.timeout_s is None else loop.time() + request.timeout_s
        async with async_playwright() as pw:
            async with asyncio.timeout_at(deadline):
                browser = await pw.chromium.launch(
                    executable_path=executable,
                    headless=True,
                    args=["--disable-dev-shm-usage", "--no-first-run"],
                    env=dict(request.env) or None,
                )
            try:
                async with asyncio.timeout_at(deadline):
                    page = await self._page(browser, guard)
                session = Session(page, guard, self.options, request.workspace, shots)
                for index, action in enumerate(actions, start=1):
                    yield AgentToolCall(f"browser.{action.action}", action.target())
                    async with asyncio.timeout_at(deadline):
                        result = await session.run(index, action)
                    results.append(result)
                    if result.status == "error":
                        break
            finally:
                await browser.close()

    async def _page(self, browser: Any, guard: Guard) -> Any:
        """The one page the actions run on, with every request guarded."""
        await guard.attach(browser)
        context = await browser.new_context(
            viewport={"width": self.options.viewport_width, "height": self.options.viewport_height},
            accept_downloads=False,
            service_workers="block",  # a worker's cache would answer without asking the guard
        )
        return await context.new_page()


__all__ = ["BrowserAdapter", "BrowserOptions", "find_chromium", "lacking", "missing_parts"]
