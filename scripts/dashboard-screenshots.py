"""Screenshots of the dashboard's pages for docs/dashboard.md (docs/images/dashboard-*.png).

Copies examples/ to a scratch directory, runs its pipelines there (the scripted
adapter's impl-issue with its review, the agent loop, a gate left waiting), starts
`swell serve` on a free loopback port and has Debian's chromium (through
Playwright) photograph each page. Run it after a change to the pages:

    .venv/bin/python scripts/dashboard-screenshots.py
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from swell.adapters.browser import find_chromium

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "images"
SWELL = [sys.executable, "-m", "swell"]


def swell(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("SWELL_STATE_DIR", "SWELL_STORE")}
    proc = subprocess.run([*SWELL, *args], cwd=cwd, env=env, capture_output=True, text=True)
    return proc.stdout


def run_id(stdout: str) -> str:
    match = re.search(r"^run (\S+)", stdout, re.MULTILINE)
    if match is None:
        raise SystemExit(f"no run id in: {stdout[:500]}")
    return match.group(1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> int:
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="swell-shots-") as tmp:
        project = Path(tmp) / "project"
        shutil.copytree(ROOT / "examples", project, ignore=shutil.ignore_patterns(".swell"))
        tour_text = (ROOT / "tests" / "web" / "pipelines" / "tour.yaml").read_text()
        (project / ".agents" / "pipelines" / "tour.yaml").write_text(tour_text)
        tour = run_id(swell(project, "run", "tour", "--auto-approve"))
        reviewed = run_id(swell(project, "run", "impl-issue", "--input", "add a greeting"))
        looped = run_id(swell(project, "run", "agent-loop", "--input", "make the tests pass"))
        swell(project, "run", "loop")
        waiting = run_id(swell(project, "run", "review", "--input", "docs", "--detach"))
        deadline = time.monotonic() + 30
        while "waiting" not in swell(project, "status", waiting) and time.monotonic() < deadline:
            time.sleep(0.2)
        port = free_port()
        env = {k: v for k, v in os.environ.items() if k not in ("SWELL_STATE_DIR", "SWELL_STORE")}
        server = subprocess.Popen(
            [*SWELL, "serve", "--port", str(port)],
            cwd=project,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(100):
                try:
                    httpx.get(f"{base}/api/runs", timeout=1)
                    break
                except httpx.HTTPError:
                    time.sleep(0.1)
            # name: (path, element to photograph or None for the viewport, colour scheme)
            pages = {
                "runs": ("/", None, "light"),
                "run": (f"/runs/{tour}", None, "light"),
                "graph": (f"/runs/{tour}", "section.card:has(svg.run-graph)", "light"),
                "timeline": (f"/runs/{tour}", "#timeline", "light"),
                "run-dark": (f"/runs/{tour}", None, "dark"),
                "search": ("/?q=loop&status=succeeded", None, "light"),
                "gate": (f"/runs/{waiting}", None, "light"),
                "visit": (f"/runs/{reviewed}/visits/implement/1", None, "light"),
                "thread": (f"/runs/{looped}/thread", None, "light"),
                "pipelines": ("/pipelines", None, "light"),
                "analytics": ("/analytics", None, "light"),
                "retro": (f"/runs/{reviewed}/retro", None, "light"),
            }
            chromium = find_chromium(None, ROOT)
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
                for name, (path, element, scheme) in pages.items():
                    page = browser.new_page(
                        viewport={"width": 1366, "height": 900}, color_scheme=scheme
                    )
                    response = page.goto(base + path)
                    if response is None or response.status != 200:
                        print(f"  {name}: {path} answered {response and response.status}")
                        continue
                    page.wait_for_timeout(300)
                    target = OUT / f"dashboard-{name}.png"
                    if element:
                        page.locator(element).first.screenshot(path=str(target))
                    else:
                        page.screenshot(path=str(target), full_page=False)
                    page.close()
                    print(f"  {name}: {target.relative_to(ROOT)}")
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=10)
            swell(project, "cancel", waiting)
    return 0


if __name__ == "__main__":
    sys.exit(main())
