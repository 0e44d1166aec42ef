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
            pages = {
                "runs": "/",
                "run": f"/runs/{reviewed}",
                "gate": f"/runs/{waiting}",
                "visit": f"/runs/{reviewed}/visits/implement/1",
                "thread": f"/runs/{looped}/thread",
                "pipelines": "/pipelines",
                "analytics": "/analytics",
                "retro": f"/runs/{reviewed}/retro",
            }
            chromium = find_chromium(None, ROOT)
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                for name, path in pages.items():
                    response = page.goto(base + path)
                    if response is None or response.status != 200:
                        print(f"  {name}: {path} answered {response and response.status}")
                        continue
                    page.wait_for_timeout(300)
                    target = OUT / f"dashboard-{name}.png"
                    page.screenshot(path=str(target), full_page=False)
                    print(f"  {name}: {target.relative_to(ROOT)}")
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=10)
            swell(project, "cancel", waiting)
    return 0


if __name__ == "__main__":
    sys.exit(main())
