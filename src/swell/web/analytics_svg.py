"""Small server-side SVG charts for the Analytics page: bars over runs (oldest to
newest) and bars by step. No script and no library; every label is escaped."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 640, 140
PAD = 28  # room for the axis labels
ROW = 18  # one step's bar in a chart by step


@dataclass(frozen=True)
class Bar:
    label: str  # shown on hover (<title>) and for steps beside the bar
    value: float
    css: str = "bar"  # a class of style.css (bar, bar-failed)


def _num(value: float) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if value >= 10_000:
        return f"{value / 1000:.0f}k"
    return f"{value:.4g}"


def column_chart(title: str, bars: Sequence[Bar], unit: str = "") -> str:
    """One column per bar, left to right, scaled to the largest."""
    top = max((b.value for b in bars), default=0) or 1
    inner_w, inner_h = WIDTH - PAD - 4, HEIGHT - 2 * PAD + 10
    step = inner_w / max(len(bars), 1)
    width = max(step - 1, 0.5)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}">',
        f"<title>{escape(title)}</title>",
        f'<text x="{PAD}" y="14" class="chart-title">{escape(title)}</text>',
        f'<text x="2" y="{PAD + 4}" class="axis">{_num(top)}{escape(unit)}</text>',
        f'<line x1="{PAD}" y1="{PAD + inner_h}" x2="{WIDTH - 4}" y2="{PAD + inner_h}" '
        'class="axis-line"/>',
    ]
    for i, b in enumerate(bars):
        h = inner_h * (b.value / top) if b.value > 0 else 0
        x, y = PAD + i * step, PAD + inner_h - h
        parts.append(
            f'<rect class="{escape(b.css)}" x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" '
            f'height="{h:.1f}"><title>{escape(b.label)}: {_num(b.value)}{escape(unit)}'
            "</title></rect>"
        )
    if not bars:
        parts.append(f'<text x="{PAD}" y="{HEIGHT // 2}" class="axis">no runs</text>')
    parts.append("</svg>")
    return "".join(parts)


def row_chart(title: str, bars: Sequence[Bar], unit: str = "") -> str:
    """One labelled row per bar, top to bottom, scaled to the largest."""
    label_w = 200
    top = max((b.value for b in bars), default=0) or 1
    height = PAD + ROW * max(len(bars), 1) + 6
    inner_w = WIDTH - label_w - 70
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}">',
        f"<title>{escape(title)}</title>",
        f'<text x="4" y="14" class="chart-title">{escape(title)}</text>',
    ]
    for i, b in enumerate(bars):
        y = PAD + i * ROW
        w = inner_w * (b.value / top) if b.value > 0 else 0
        name = b.label if len(b.label) <= 30 else b.label[:29] + "…"
        parts += [
            f'<text x="4" y="{y + 12}" class="axis">{escape(name)}</text>',
            f'<rect class="{escape(b.css)}" x="{label_w}" y="{y + 2}" width="{w:.1f}" '
            f'height="{ROW - 5}"><title>{escape(b.label)}</title></rect>',
            f'<text x="{label_w + w + 4:.1f}" y="{y + 12}" class="axis">'
            f"{_num(b.value)}{escape(unit)}</text>",
        ]
    parts.append("</svg>")
    return "".join(parts)
