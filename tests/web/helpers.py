"""What the dashboard tests share: small command pipelines run for real, and an
in-process client over the app (httpx's ASGI transport)."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import REPO, run_id_of, start_swell, swell, wait_for, write_pipeline
from swell.adapters.browser import find_chromium, missing_parts
from swell.web.app import create_app
from swell.web.state import ServeSettings

BASE = "http://127.0.0.1"

HOSTILE = r"""kind: WavePipeline
metadata: {name: hostile}
steps:
  - id: emit
    type: command
    script: |
      head -c 300000 /dev/zero | tr '\0' 'x'; echo
      printf '<script>alert(1)</script>\n'
      printf '\033[31mred\033[0m and <a href="javascript:alert(2)">x</a>\n'
      mkdir -p out && printf 'report <b>bold</b>\n' > out/report.md
    output_artifacts: [{name: report, path: out/report.md}]
  - id: check
    type: command
    dependencies: [emit]
    script: echo checked
"""


def chatty(release: Path) -> str:
    """A command step that prints three lines, waits until the test creates `release`
    (so the test sees it running whatever the machine's load), then prints three more."""
    return f"""kind: WavePipeline
metadata: {{name: chatty}}
steps:
  - id: talk
    type: command
    script: |
      for i in 1 2 3; do echo "line $i"; done
      n=0; while [ ! -e {release} ] && [ $n -lt 1200 ]; do sleep 0.1; n=$((n+1)); done
      for i in 4 5 6; do echo "line $i"; done
"""


def run_pipeline(project: Path, name: str, text: str, *args: str) -> str:
    write_pipeline(project, name, text)
    result = swell("run", name, *args, cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    return run_id_of(result.stdout)


def client(project: Path, token: str | None = None) -> httpx.AsyncClient:
    app = create_app(ServeSettings(root=project, token=token))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(project: Path) -> Iterator[str]:
    port = _free_port()
    proc = start_swell("serve", "--port", str(port), cwd=project)
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return httpx.get(f"{url}/api/runs", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_for(up, timeout=30)
        yield url
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


@pytest.fixture
def page() -> Iterator[Any]:
    """A page of Debian's chromium, found as the browser adapter finds it."""
    missing = missing_parts(None, REPO)
    if missing:
        if os.environ.get("SWELL_REQUIRE_BROWSER") == "1":
            pytest.fail(f"SWELL_REQUIRE_BROWSER=1 but {missing}")
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        executable = find_chromium(None, REPO)
        browser = pw.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield browser.new_page()
        finally:
            browser.close()
