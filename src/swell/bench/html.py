"""A bench report as one HTML page: bars drawn as inline SVG on the server (no
plotting library, no script), the same numbers as the text report."""

from __future__ import annotations

from html import escape

from swell.bench.report import BenchReport, PipelineSummary

_BAR_W, _ROW_H, _LABEL_W = 360, 26, 220


def _bars(
    title: str,
    rows: list[tuple[str, float, str]],
    top: float,
    whiskers: list[tuple[float, float]] | None = None,
) -> str:
    """Horizontal bars: (label, value, text) scaled to `top`; whiskers in the same units."""
    height = _ROW_H * len(rows) + 30
    width = _LABEL_W + _BAR_W + 120
    parts = [
        f"<figure><figcaption>{escape(title)}</figcaption>"
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(title)}">'
    ]
    for i, (label, value, text) in enumerate(rows):
        y = 10 + i * _ROW_H
        w = 0 if top <= 0 else _BAR_W * max(0.0, value) / top
        parts.append(
            f'<text x="{_LABEL_W - 8}" y="{y + 15}" text-anchor="end">{escape(label)}</text>'
            f'<rect x="{_LABEL_W}" y="{y + 2}" width="{w:.1f}" height="{_ROW_H - 8}" fill="#4a7fb5"/>'
        )
        if whiskers is not None and top > 0:
            lo, hi = whiskers[i]
            x1, x2 = _LABEL_W + _BAR_W * lo / top, _LABEL_W + _BAR_W * hi / top
            mid = y + _ROW_H / 2 - 2
            parts.append(
                f'<line x1="{x1:.1f}" y1="{mid}" x2="{x2:.1f}" y2="{mid}" stroke="#222"/>'
                f'<line x1="{x1:.1f}" y1="{mid - 5}" x2="{x1:.1f}" y2="{mid + 5}" stroke="#222"/>'
                f'<line x1="{x2:.1f}" y1="{mid - 5}" x2="{x2:.1f}" y2="{mid + 5}" stroke="#222"/>'
            )
        parts.append(f'<text x="{_LABEL_W + _BAR_W + 8}" y="{y + 15}">{escape(text)}</text>')
    parts.append("</svg></figure>")
    return "".join(parts)


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def _summary_rows(pipelines: list[PipelineSummary]) -> str:
    head = (
        "<tr><th>pipeline</th><th>resolved</th><th>95% CI</th><th>cost/task</th>"
        "<th>cost/resolved</th><th>tokens/task</th><th>s/task</th><th>visits/task</th>"
        "<th>reworks</th><th>review pass</th><th>breaker trips</th></tr>"
    )
    rows = [
        f"<tr><td>{escape(s.label)}</td><td>{s.resolved}/{s.tasks} ({s.resolved_rate:.1%})</td>"
        f"<td>{s.ci_low:.1%}-{s.ci_high:.1%}</td><td>{_money(s.cost_per_task)}</td>"
        f"<td>{_money(s.cost_per_resolved)}</td><td>{s.tokens_per_task:.0f}</td>"
        f"<td>{s.seconds_per_task:.1f}</td><td>{s.visits_per_task:.1f}</td><td>{s.reworks}</td>"
        f"<td>{'-' if s.review_pass_rate is None else f'{s.review_pass_rate:.0%}'}</td>"
        f"<td>{s.breaker_trips}</td></tr>"
        for s in pipelines
    ]
    return f"<table>{head}{''.join(rows)}</table>"


def report_html(report: BenchReport) -> str:
    ps = report.pipelines
    resolved = _bars(
        "resolved (bar) with its 95% Wilson interval",
        [(s.label, s.resolved_rate * 100, f"{s.resolved_rate:.1%}") for s in ps],
        100.0,
        [(s.ci_low * 100, s.ci_high * 100) for s in ps],
    )
    costs = [s.cost_per_resolved or 0.0 for s in ps]
    cost = _bars(
        "cost per resolved task",
        [(s.label, c, _money(s.cost_per_resolved)) for s, c in zip(ps, costs, strict=True)],
        max(costs, default=0.0),
    )
    secs = [s.seconds_per_task for s in ps]
    time = _bars(
        "wall time per task (s)",
        [(s.label, v, f"{v:.1f}s") for s, v in zip(ps, secs, strict=True)],
        max(secs, default=0.0),
    )
    pairs = "".join(
        f"<li>{escape(p.a)} vs {escape(p.b)} on {p.tasks} tasks: only {escape(p.a)} "
        f"{len(p.only_a)}, only {escape(p.b)} {len(p.only_b)}, both {p.both}, neither "
        f"{p.neither}; McNemar exact p = {p.p_value:.3g}</li>"
        for p in report.pairs
    )
    labels = [s.label for s in ps]
    cells = "".join(
        f"<tr><td>{escape(t.instance_id)}</td>"
        + "".join(f'<td class="{v}">{v}</td>' for v in (t.verdicts[x] for x in labels))
        + "</tr>"
        for t in report.tasks
    )
    head = "".join(f"<th>{escape(x)}</th>" for x in labels)
    return (
        "<!doctype html><html><head><meta charset=utf-8>"
        f"<title>bench {escape(report.bench_id)}</title><style>"
        "body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 8px}.resolved{background:#d6f5d6}"
        ".unresolved{background:#f9dcdc}.error{background:#eee}figure{margin:1em 0}"
        "</style></head><body>"
        f"<h1>bench {escape(report.bench_id)}</h1><p>dataset {escape(report.dataset)}, "
        f"{escape(report.created)}</p>{_summary_rows(ps)}{resolved}{cost}{time}"
        f"<h2>paired comparison</h2><ul>{pairs or '<li>one pipeline</li>'}</ul>"
        f"<h2>tasks</h2><table><tr><th>task</th>{head}</tr>{cells}</table></body></html>\n"
    )
