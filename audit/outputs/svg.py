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


DASHES = ("", "7,4", "2,3", "9,3,2,3", "4,4", "12,4")
CHAR_PX = 6.3  # width of one character of the 11 px sans-serif labels, roughly


def text_width(text: str) -> float:
    return len(text) * CHAR_PX


def legend(items: Sequence[tuple[str, str]], x0: float, y0: float, width: float) -> tuple[list[str], float]:
    """Legend entries (an SVG template drawing the key from {x} to {x2} at {y}, and the label) laid out in rows from (x0, y0)
    within ``width``, below the plot so that no label is clipped. Returns the elements and the height."""
    out, x, y = [], x0, y0
    for key, label in items:
        w = 28 + text_width(label) + 16
        if x > x0 and x + w > x0 + width:
            x, y = x0, y + 16
        out.append(key.format(x=x, y=y, x2=x + 22) + f'<text x="{x + 28:.1f}" y="{y + 4:.1f}">{escape(label)}</text>')
        x += w
    return out, (y - y0 + 16) if items else 0


def line_chart(series: Mapping[str, Sequence[tuple[float, float]]], *, title: str = "", xlabel: str = "",
               ylabel: str = "", hlines: Mapping[str, float] | None = None, width: int = 560, height: int = 340,
               ylim: tuple[float, float] | None = None, logx: bool = False) -> str:
    """Return a standalone ``<svg>`` string with one polyline per series (points sorted by x).

    Each series has its own colour and dash pattern; a series identical to an earlier one is drawn
    a few pixels below it and says so in the legend, so that neither hides the other. ``hlines``
    draws labelled dashed horizontal reference lines (e.g. a baseline). The legend sits under the
    plot. Points with a non-finite coordinate are skipped. ``logx`` plots x on a log10 scale.
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
    left, right, top, bottom = 60, 20, 30 if title else 12, 45
    pw, ph = width - left - right, height - top - bottom

    def px(x: float) -> float:
        return left + (fx(x) - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        return top + (1 - (y - y0) / (y1 - y0)) * ph

    body = []
    if title:
        body.append(f'<text x="{left + pw / 2:.1f}" y="18" text-anchor="middle" font-size="13">{escape(title)}</text>')
    body.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>')
    for t in _ticks(y0, y1):
        y = py(t)
        body.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>'
                    f'<text x="{left - 5}" y="{y + 4:.1f}" text-anchor="end">{_fmt(t)}</text>')
    xticks = [10 ** e for e in range(math.floor(x0), math.ceil(x1) + 1)] if logx else _ticks(x0, x1)
    shown = [t for t in xticks if left - 0.5 <= px(t) <= left + pw + 0.5]
    room = max((text_width(_fmt(t)) for t in shown), default=0) + 8
    step = max(1, math.ceil(room * len(shown) / pw)) if shown else 1
    for i, t in enumerate(shown):
        x = px(t)
        body.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top + ph}" y2="{top + ph + 4}" stroke="#333"/>')
        if i % step == 0:
            body.append(f'<text x="{x:.1f}" y="{top + ph + 16}" text-anchor="middle">{_fmt(t)}</text>')
    if xlabel:
        body.append(f'<text x="{left + pw / 2:.1f}" y="{top + ph + 36}" text-anchor="middle">{escape(xlabel)}</text>')
    if ylabel:
        body.append(f'<text transform="translate(14,{top + ph / 2:.1f}) rotate(-90)" text-anchor="middle">'
                    f'{escape(ylabel)}</text>')
    keys = []
    for name, value in hlines.items():
        y = py(value)
        body.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#777" '
                    f'stroke-dasharray="5,4"/>')
        keys.append(('<line x1="{x:.1f}" x2="{x2:.1f}" y1="{y:.1f}" y2="{y:.1f}" stroke="#777" stroke-dasharray="5,4"/>',
                     name))
    drawn: list[tuple[str, list]] = []
    for i, (name, pts) in enumerate(clean.items()):
        colour, dash = PALETTE[i % len(PALETTE)], DASHES[i % len(DASHES)]
        same = [other for other, opts in drawn if opts == pts]
        shift = 2.5 * sum(1 for _, opts in drawn if opts == pts)  # px: a coinciding line shows beside the other
        drawn.append((name, pts))
        style = f'stroke="{colour}" stroke-width="2"' + (f' stroke-dasharray="{dash}"' if dash else "")
        if pts:
            path = " ".join(f"{px(x):.1f},{py(y) + shift:.1f}" for x, y in pts)
            body.append(f'<polyline fill="none" {style} points="{path}"/>')
            body.extend(f'<circle cx="{px(x):.1f}" cy="{py(y) + shift:.1f}" r="2.2" fill="{colour}"/>' for x, y in pts)
        label = f"{name} (same as {same[0]})" if same and pts else name if pts else f"{name} (no points)"
        keys.append(('<line x1="{x:.1f}" x2="{x2:.1f}" y1="{y:.1f}" y2="{y:.1f}" ' + style + '/>', label))
    entries, extra = legend(keys, left, top + ph + 56, pw)
    total = top + ph + 56 + extra
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total:.0f}" '
           f'viewBox="0 0 {width} {total:.0f}" font-family="sans-serif" font-size="11" role="img">',
           f'<rect x="0" y="0" width="{width}" height="{total:.0f}" fill="white"/>', *body, *entries, "</svg>"]
    return "\n".join(out)
