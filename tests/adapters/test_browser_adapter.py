"""The `browser` adapter: pipelines run through the CLI drive Debian's chromium (through
Playwright) against pages served on 127.0.0.1 by a server these tests start.

Skipped when chromium or playwright is missing, unless SWELL_REQUIRE_BROWSER=1 (CI),
which makes that a failure. Playwright's own browser downloads are never used."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from conftest import swell, swell_json, write_pipeline
from swell.adapters.browser import missing_parts

FORM = """<!doctype html><title>Greeter</title>
<body>
  <input id="name"> <button id="go" onclick="greet()">Go</button>
  <div id="out"></div>
  <img src="http://localhost:{port}/pixel.png">
  <a id="pop" target="_blank" href="http://localhost:{port}/popup">elsewhere</a>
  <script>
    function greet() {{
      const p = document.createElement("p");
      p.id = "greeting";
      p.textContent = "hello " + document.getElementById("name").value;
      document.getElementById("out").appendChild(p);
    }}
  </script>
</body>"""
BIG = "<!doctype html><title>Big</title><body><p id='big'>" + "é" * 3000 + "</p></body>"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
HOSTS: list[str] = []  # the Host header of every request the server got


class Pages(BaseHTTPRequestHandler):
    """/form (a greeter), /big (6000 bytes of text), /hop/N (N redirects, then /form),
    /away (a redirect to localhost, another host than 127.0.0.1)."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        HOSTS.append(self.headers.get("Host", ""))
        port = self.server.server_address[1]
        if self.path.startswith("/hop/"):
            n = int(self.path.removeprefix("/hop/"))
            return self._redirect(f"/hop/{n - 1}" if n > 1 else "/form")
        if self.path == "/away":
            return self._redirect(f"http://localhost:{port}/form")
        body = BIG if self.path == "/big" else FORM.format(port=port)
        raw = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    missing = missing_parts(None, Path("."))
    if missing:
        if os.environ.get("SWELL_REQUIRE_BROWSER") == "1":
            pytest.fail(f"SWELL_REQUIRE_BROWSER=1 but {missing}")
        pytest.skip(missing)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


MANIFEST = """apiVersion: v1
kind: WaveManifest
metadata: {name: browsing}
adapters:
  browser:
    options: {allowed_domains: ["127.0.0.1"], viewport_width: 800, viewport_height: 600}
  tight:
    type: browser
    options: {max_response_bytes: 1000, max_redirects: 2}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "browsing"
    root.mkdir()
    (root / "wave.yaml").write_text(MANIFEST)
    return root


def browse(project: Path, actions: list[dict[str, Any]], adapter: str = "browser") -> None:
    """A pipeline `browse` with one browser step running `actions` (the URL prefix is
    the input), its results declared as the file output `results`."""
    source = json.dumps(actions, indent=2).replace("SITE", "{{ input }}")
    lines = "\n".join("        " + line for line in source.splitlines())
    write_pipeline(
        project,
        "browse",
        f"""kind: WavePipeline
metadata: {{name: browse}}
steps:
  - id: look
    adapter: {adapter}
    exec:
      type: prompt
      source: |
{lines}
    output_artifacts:
      - name: results
        path: out/results.json
        type: json
""",
    )


def artifacts(project: Path) -> dict[str, dict[str, Any]]:
    return {a["name"]: a for a in swell_json("artifacts", cwd=project)}


def test_a_pipeline_types_clicks_reads_and_takes_a_screenshot(project: Path, site: str) -> None:
    browse(
        project,
        [
            {"action": "navigate", "url": "SITE/form", "wait_for": "#name"},
            {"action": "type", "selector": "#name", "value": "swell"},
            {"action": "click", "selector": "#go"},
            {"action": "get_text", "selector": "#greeting", "wait_for": "#greeting"},
            {"action": "get_html", "selector": "#out"},
            {"action": "screenshot", "path": "shots/greeted.png"},
            {"action": "screenshot", "format": "png"},
        ],
    )
    result = swell("run", "browse", "--input", site, cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "browser.click #go" in result.stdout  # each action shows as it runs

    found = artifacts(project)
    results = json.loads(Path(found["results"]["path"]).read_text())
    assert [r["action"] for r in results] == [
        "navigate", "type", "click", "get_text", "get_html", "screenshot", "screenshot",
    ]  # fmt: skip
    assert {r["status"] for r in results} == {"success"}
    navigate = results[0]["data"]
    assert navigate["title"] == "Greeter"
    assert navigate["status"] == 200
    # the image from localhost is not on the allow-list: blocked, and said so
    assert any("localhost" in b and "allowed_domains" in b for b in navigate["blocked"])
    assert results[3]["data"]["text"] == "hello swell"
    assert '<p id="greeting">hello swell</p>' in results[4]["data"]["html"]

    # both screenshots are PNG files in the workspace, recorded as the run's artifacts
    shot = found["greeted"]
    assert shot["type"] == "png" and shot["path"].endswith("shots/greeted.png")
    data = Path(shot["path"]).read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) == shot["size"] == results[5]["data"]["bytes"]
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (800, 600)  # the configured viewport
    unnamed = found["screenshot-7"]
    assert unnamed["path"].endswith(".agents/output/screenshots/screenshot-7.png")
    assert Path(unnamed["path"]).read_bytes().startswith(PNG_MAGIC)


def test_a_failing_action_stops_the_step_with_its_message(project: Path, site: str) -> None:
    browse(
        project,
        [
            {"action": "navigate", "url": "SITE/form"},
            {"action": "click", "selector": "#missing", "timeout_ms": 500},
            {"action": "screenshot", "path": "never.png"},
        ],
    )
    result = swell("run", "browse", "--input", site, cwd=project)
    assert result.returncode == 1
    assert "browser action 2 (click #missing) failed: timed out after 500 ms" in result.stdout
    assert "browser.screenshot" not in result.stdout  # nothing ran after the failure
    assert "Traceback" not in result.stdout + result.stderr
    assert not list(project.rglob("never.png"))


def test_a_bad_action_list_is_one_clear_error(project: Path, site: str) -> None:
    browse(project, [{"action": "navigate", "url": "SITE/form"}, {"action": "click"}])
    result = swell("run", "browse", "--input", site, cwd=project)
    assert result.returncode == 1
    assert "browser adapter: action 2 (click): click needs 'selector'" in result.stdout
    assert "browser.navigate" not in result.stdout  # checked before the browser starts


def test_the_allow_list_refuses_another_host(project: Path, site: str) -> None:
    port = site.rsplit(":", 1)[1]
    browse(project, [{"action": "navigate", "url": f"http://localhost:{port}/form"}])
    result = swell("run", "browse", "--input", site, cwd=project)
    assert result.returncode == 1
    assert "host 'localhost' is not in allowed_domains (127.0.0.1)" in result.stdout

    # a redirect to another host is refused too (each hop is checked, not just the first)
    browse(project, [{"action": "navigate", "url": "SITE/away"}])
    result = swell("run", "browse", "--input", site, cwd=project)
    assert result.returncode == 1
    assert "browser action 1 (navigate" in result.stdout
    assert f"refused http://localhost:{port}/form: host 'localhost'" in result.stdout


def test_the_allow_list_holds_for_sub_resources_and_popups(project: Path, site: str) -> None:
    HOSTS.clear()
    browse(
        project,
        [
            {"action": "navigate", "url": "SITE/form"},
            {"action": "click", "selector": "#pop"},  # opens localhost in a new page
            {"action": "navigate", "url": "SITE/big"},
        ],
    )
    result = swell("run", "browse", "--input", site, cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    results = json.loads(Path(artifacts(project)["results"]["path"]).read_text())
    assert any("/pixel.png" in b for b in results[0]["data"]["blocked"])
    # the popup loads after the click returns: its refusal lands in a later action's list
    later = [b for r in results[1:] for b in r["data"].get("blocked", [])]
    assert any("/popup" in b and "not in allowed_domains" in b for b in later)
    assert HOSTS and not [h for h in HOSTS if h.startswith("localhost")]


def test_text_beyond_the_response_limit_is_cut_and_flagged(project: Path, site: str) -> None:
    browse(
        project,
        [
            {"action": "navigate", "url": "SITE/big"},
            {"action": "get_text", "selector": "#big"},
            {"action": "get_html"},
        ],
        adapter="tight",
    )
    result = swell("run", "browse", "--input", site, cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    results = json.loads(Path(artifacts(project)["results"]["path"]).read_text())
    for got, key in ((results[1]["data"], "text"), (results[2]["data"], "html")):
        assert got["truncated"] is True
        assert len(got[key].encode()) <= 1000  # bytes, never cutting a character in two
        assert "max_response_bytes (1000)" in got["warning"]
    assert results[1]["data"]["text"] == "é" * 500


def test_redirects_beyond_the_limit_fail_the_navigation(project: Path, site: str) -> None:
    browse(project, [{"action": "navigate", "url": "SITE/hop/2"}], adapter="tight")
    result = swell("run", "browse", "--input", site, cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    results = json.loads(Path(artifacts(project)["results"]["path"]).read_text())
    assert results[0]["data"]["redirects"] == 2

    browse(project, [{"action": "navigate", "url": "SITE/hop/3"}], adapter="tight")
    result = swell("run", "browse", "--input", site, cwd=project)
    assert result.returncode == 1
    assert "more than max_redirects (2) redirects" in result.stdout


def test_a_missing_chromium_is_one_clear_error(project: Path, site: str) -> None:
    (project / "wave.yaml").write_text(
        MANIFEST + "  nochrome:\n    type: browser\n    binary: ./no/such/chromium\n"
    )
    browse(project, [{"action": "navigate", "url": "SITE/form"}], adapter="nochrome")
    result = swell("run", "browse", "--input", site, cwd=project)
    assert result.returncode == 1
    assert "browser adapter: `./no/such/chromium` not found; apt-get install chromium" in (
        result.stdout + result.stderr
    )
    assert "Traceback" not in result.stdout + result.stderr

    # `swell doctor` reports it too, with the fix
    doctor = swell("doctor", "-o", "json", cwd=project)
    assert doctor.returncode == 1
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"] if c["area"] == "browser"}
    assert checks["browser (adapters.nochrome)"]["status"] == "missing"
    assert "`./no/such/chromium` not found" in checks["browser (adapters.nochrome)"]["detail"]
    assert "apt-get install chromium" in checks["browser (adapters.nochrome)"]["fix"]


def test_the_browser_gets_its_actions_alone_after_an_injected_artifact(
    project: Path, site: str
) -> None:
    # an agent would be told about the injected file in its prompt; the browser's prompt
    # is data, so it is given the step's own rendered actions and nothing else
    write_pipeline(
        project,
        "after",
        """kind: WavePipeline
metadata: {name: after}
steps:
  - id: pick
    type: command
    script: echo /form
    output_artifacts:
      - {name: route, path: route.txt, source: stdout, required: true}
  - id: look
    adapter: browser
    dependencies: [pick]
    memory:
      inject_artifacts:
        - {step: pick, artifact: route}
    exec:
      type: prompt
      source: '[{"action": "navigate", "url": "{{ input }}/form"}, {"action": "get_text"}]'
""",
    )
    result = swell("run", "after", "--input", site, cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "browser.get_text" in result.stdout  # the prompt parsed as actions


def test_a_chromium_that_does_not_start_is_one_clear_error(project: Path, site: str) -> None:
    (project / "wave.yaml").write_text(
        MANIFEST + "  broken:\n    type: browser\n    binary: /bin/true\n"
    )
    browse(project, [{"action": "navigate", "url": "SITE/form"}], adapter="broken")
    result = swell("run", "browse", "--input", site, cwd=project)
    assert result.returncode == 1
    assert "crash: browser adapter: chromium failed: BrowserType.launch:" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
