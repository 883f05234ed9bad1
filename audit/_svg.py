"""A tiny dependency-free SVG line chart, for plots inlined in reports and written beside JSON."""
from __future__ import annotations

import math
from html import escape
from typing import Mapping, Sequence

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")


def _ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values covering [lo, hi]."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    out, v = [], first
    while v <= hi + step * 1e-9:
        out.append(round(v, 10))
        v += step
    return out


def _fmt(v: float) -> str:
    return f"{v:.0f}" if abs(v - round(v)) < 1e-9 else f"{v:g}"


def line_chart(series: Mapping[str, Sequence[tuple[float, float]]], *, title: str = "", xlabel: str = "",
               ylabel: str = "", hlines: Mapping[str, float] | None = None, width: int = 560, height: int = 340,
               ylim: tuple[float, float] | None = None, logx: bool = False) -> str:
    """Return a standalone ``<svg>`` string with one polyline per series (points sorted by x).

    ``hlines`` draws labelled dashed horizontal reference lines (e.g. a baseline). Points with a
    non-finite coordinate are skipped. ``logx`` plots x on a log10 scale (x must be positive).
    """
    hlines = dict(hlines or {})
    fx = (lambda x: math.log10(x)) if logx else (lambda x: x)
    clean = {name: sorted((float(x), float(y)) for x, y in pts
                          if x is not None and y is not None and math.isfinite(float(x)) and math.isfinite(float(y))
                          and (not logx or float(x) > 0))
             for name, pts in series.items()}
    xs = [fx(x) for pts in clean.values() for x, _ in pts] or [0.0, 1.0]
    ys = [y for pts in clean.values() for _, y in pts] + list(hlines.values()) or [0.0, 1.0]
    x0, x1 = min(xs), max(xs)
    y0, y1 = ylim if ylim else (min(ys), max(ys))
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    if y1 == y0:
        y0, y1 = y0 - 1, y1 + 1
    left, right, top, bottom = 60, 130, 30 if title else 12, 45
    pw, ph = width - left - right, height - top - bottom

    def px(x: float) -> float:
        return left + (fx(x) - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        return top + (1 - (y - y0) / (y1 - y0)) * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>']
    if title:
        out.append(f'<text x="{left + pw / 2:.1f}" y="18" text-anchor="middle" font-size="13">{escape(title)}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>')
    for t in _ticks(y0, y1):
        y = py(t)
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>'
                   f'<text x="{left - 5}" y="{y + 4:.1f}" text-anchor="end">{_fmt(t)}</text>')
    xticks = [10 ** e for e in range(math.floor(x0), math.ceil(x1) + 1)] if logx else _ticks(x0, x1)
    for t in xticks:
        x = px(t)
        if left - 0.5 <= x <= left + pw + 0.5:
            out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top + ph}" y2="{top + ph + 4}" stroke="#333"/>'
                       f'<text x="{x:.1f}" y="{top + ph + 16}" text-anchor="middle">{_fmt(t)}</text>')
    if xlabel:
        out.append(f'<text x="{left + pw / 2:.1f}" y="{height - 8}" text-anchor="middle">{escape(xlabel)}</text>')
    if ylabel:
        out.append(f'<text transform="translate(14,{top + ph / 2:.1f}) rotate(-90)" text-anchor="middle">'
                   f'{escape(ylabel)}</text>')
    legend_y = top + 10
    for i, (name, value) in enumerate(hlines.items()):
        y = py(value)
        out.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#777" '
                   f'stroke-dasharray="5,4"/>')
        out.append(f'<text x="{left + pw + 8}" y="{legend_y + 4}" fill="#777">- - {escape(name)}</text>')
        legend_y += 16
    for i, (name, pts) in enumerate(clean.items()):
        colour = PALETTE[i % len(PALETTE)]
        if pts:
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
            out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.8" points="{path}"/>')
            out.extend(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.2" fill="{colour}"/>' for x, y in pts)
        out.append(f'<line x1="{left + pw + 8}" x2="{left + pw + 24}" y1="{legend_y:.1f}" y2="{legend_y:.1f}" '
                   f'stroke="{colour}" stroke-width="2"/><text x="{left + pw + 28}" y="{legend_y + 4}">'
                   f'{escape(name)}</text>')
        legend_y += 16
    out.append("</svg>")
    return "\n".join(out)
