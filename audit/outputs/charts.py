"""The report's bar charts and histograms (inline SVG)."""
from __future__ import annotations

import math
from html import escape
from typing import Mapping

from .svg import PALETTE, _fmt, _ticks, legend, text_width


# ---------------------------------------------------------------------------------------------- charts

def bar_chart(groups: Mapping[str, Mapping[str, float]], *, title: str = "", xlabel: str = "", ylabel: str = "",
              width: int = 560, height: int = 300) -> str:
    """Grouped bars: ``groups`` maps x label -> {series: value}. Returns an inline ``<svg>``; x labels
    that would collide are turned and, if still too many, thinned; the legend (several series) sits below."""
    series = list(dict.fromkeys(s for g in groups.values() for s in g))
    ticks = _ticks(0, max([v for g in groups.values() for v in g.values()] + [1]), 4)
    top = ticks[-1] if ticks[-1] > 0 else 1
    if max([v for g in groups.values() for v in g.values()] + [0]) > top:
        top = top + (ticks[1] - ticks[0] if len(ticks) > 1 else 1)
        ticks.append(top)
    n = max(len(groups), 1)
    left, right, head = 55, 20, 30 if title else 12
    pw = width - left - right
    slot = pw / n
    widest = max((text_width(str(g)) for g in groups), default=0)
    turned = widest + 6 > slot
    every = max(1, math.ceil(n * 16 / pw)) if turned else 1  # turned labels need ~16 px each
    under = (widest * 0.71 + 14) if turned else 16  # height of the x labels (turned 45 degrees)
    ph = height - head - under - 30
    bw = max(slot * 0.8 / max(len(series), 1), 1)
    body = []
    if title:
        body.append(f'<text x="{left + pw / 2:.1f}" y="18" text-anchor="middle" font-size="13">{escape(title)}</text>')
    for v in ticks:
        y = head + ph - ph * v / top
        body.append(f'<line x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>'
                    f'<text x="{left - 5}" y="{y + 4:.1f}" text-anchor="end">{_fmt(v)}</text>')
    for gi, (label, values) in enumerate(groups.items()):
        x0 = left + gi * slot + slot * 0.1
        for si, name in enumerate(series):
            v = float(values.get(name, 0) or 0)
            h = ph * v / top
            body.append(f'<rect x="{x0 + si * bw:.1f}" y="{head + ph - h:.1f}" width="{bw - 1:.1f}" height="{h:.1f}" '
                        f'fill="{PALETTE[si % len(PALETTE)]}"><title>{escape(str(label))}: {escape(name)} '
                        f'{v:g}</title></rect>')
        if gi % every == 0:
            x, y = left + gi * slot + slot / 2, head + ph + 14
            if turned:
                body.append(f'<text transform="translate({x + 3:.1f},{y - 4:.1f}) rotate(-45)" text-anchor="end">'
                            f'{escape(str(label))}</text>')
            else:
                body.append(f'<text x="{x:.1f}" y="{y}" text-anchor="middle">{escape(str(label))}</text>')
    body.append(f'<rect x="{left}" y="{head}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>')
    if xlabel:
        body.append(f'<text x="{left + pw / 2:.1f}" y="{head + ph + under + 18:.1f}" text-anchor="middle">'
                    f'{escape(xlabel)}</text>')
    if ylabel:
        body.append(f'<text transform="translate(14,{head + ph / 2:.1f}) rotate(-90)" text-anchor="middle">'
                    f'{escape(ylabel)}</text>')
    keys = [(f'<rect x="{{x:.1f}}" y="{{y:.1f}}" width="14" height="10" transform="translate(4,-6)" '
             f'fill="{PALETTE[si % len(PALETTE)]}"/>', name) for si, name in enumerate(series)] if len(series) > 1 else []
    entries, extra = legend(keys, left, head + ph + under + 38, pw)
    total = head + ph + under + 30 + (extra + 12 if extra else 0)
    return "\n".join([f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total:.0f}" '
                      f'viewBox="0 0 {width} {total:.0f}" font-family="sans-serif" font-size="11" role="img">',
                      f'<rect x="0" y="0" width="{width}" height="{total:.0f}" fill="white"/>', *body, *entries,
                      "</svg>"])


def histogram(values: list[int], bins: int = 12) -> dict[str, dict[str, float]]:
    if not values:
        return {}
    hi = max(values)
    if hi < bins:
        return {str(v): {"units": sum(x == v for x in values)} for v in range(hi + 1)}
    step = -(-(hi + 1) // bins)
    out = {}
    for lo in range(0, hi + 1, step):
        out[f"{lo}-{lo + step - 1}"] = {"units": sum(lo <= x < lo + step for x in values)}
    return out
