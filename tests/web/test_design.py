"""The dashboard's look: one stylesheet of tokens (light and dark), a real layout,
relative times with the exact time on hover, and nothing loaded from elsewhere."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import HOSTILE, run_pipeline
from test_pages import get

from conftest import swell

STATIC = Path(__file__).parents[2] / "src" / "swell" / "web" / "static"
# what makes a browser fetch something: an attribute or a CSS url() naming a URL
# with a scheme or a protocol-relative one (`//host/...`)
EXTERNAL = re.compile(
    r"""(?:\b(?:src|href|action|srcset|poster|data)\s*=\s*["']?|url\(\s*["']?|@import\s+["']?)"""
    r"""(?:[a-z][a-z0-9+.-]*:)?//""",
    re.I,
)


def _pages(project: Path) -> list[str]:
    run_id = run_pipeline(project, "hostile", HOSTILE)
    reviewed = swell("run", "impl-issue", "--input", "add a greeting", cwd=project)
    assert reviewed.returncode == 0, reviewed.stdout + reviewed.stderr
    return [
        "/",
        "/?status=succeeded&q=hostile",
        f"/runs/{run_id}",
        f"/runs/{run_id}/visits/emit/1",
        f"/runs/{run_id}/thread",
        f"/runs/{run_id}/retro",
        "/pipelines",
        "/analytics",
    ]


def test_no_page_asks_for_anything_from_elsewhere(project: Path) -> None:
    for url in _pages(project):
        status, html, _ = get(project, url)
        assert status == 200, url
        assert not EXTERNAL.search(html), (url, EXTERNAL.search(html))
        for asset in re.findall(r'(?:href|src)="(/static/[^"]+)"', html):
            code, body, _ = get(project, asset)
            assert code == 200 and not EXTERNAL.search(body), asset
    for path in STATIC.iterdir():
        assert not EXTERNAL.search(path.read_text()), path.name


def test_one_design_system_light_and_dark() -> None:
    css = (STATIC / "style.css").read_text()
    assert "@media (prefers-color-scheme: dark)" in css
    light, dark = css.split("@media (prefers-color-scheme: dark)", 1)
    for token in ("--bg", "--surface", "--text", "--muted", "--ok", "--bad", "--focus"):
        assert f"{token}:" in light and f"{token}:" in dark.split("}")[0] + dark, token
    assert ":focus-visible" in css  # keyboard focus is always visible
    assert re.search(r"@media \(max-width: \d+px\)", css)  # narrower screens


def test_pages_share_the_layout_and_times_show_exactly_on_hover(project: Path) -> None:
    run_id = run_pipeline(project, "hostile", HOSTILE)
    _, html, _ = get(project, "/")
    assert '<header class="top">' in html and 'aria-current="page">Runs<' in html
    assert 'class="skip" href="#main"' in html
    # "just now" in the cell, the exact UTC time in its title
    created = re.search(r'<time datetime="([^"]+)" title="([^"]+ UTC)">([^<]+)</time>', html)
    assert created and created.group(3) in ("just now", "1 min ago", "2 min ago")
    _, run_html, _ = get(project, f"/runs/{run_id}")
    assert 'class="stats"' in run_html and 'class="table-wrap"' in run_html
