"""The published tables drawn as grids, each cell coloured by status, with its interval."""
from __future__ import annotations

from typing import Mapping

from ..findings.model import Findings
from ..policy.checks import pinned_words, unit_intervals
from .words import figure


GRID_STATUS = {"p": ("s-pub", "published"), "r": ("s-round", "rounded"), "n": ("s-noise", "noisy"),
               "P": ("s-pri", "primary suppression"),
               "S": ("s-sec", "secondary suppression"), "D": ("s-sup", "suppressed"),
               "z": ("s-zero", "structural zero"), "e": ("s-empty", "empty (no records to average)")}


HIDDEN = {"s-pri", "s-sec", "s-sup"}  # a table with one of these opens in the report


def _grid_cell(code: str, interval: Mapping | None) -> dict:
    """One value of a grid: its CSS class, the text shown and the status in words (with the feasibility
    interval of a hidden count where the findings have it)."""
    css, words = GRID_STATUS.get(code[:1], GRID_STATUS["D"])
    text = code[1:] if code[:1] in "prnzP" else ""
    if code[:1] == "z" and not text:
        text = "–"
    if code[:1] == "n":
        words = "published with noise added (the value shown), not the true count"
    if interval is not None and interval.get("pinned") and code[:1] in "PSD":
        words, text = f"{words}; {pinned_words(interval['value'])}: published, to an attacker", f"[{interval['value']}]"
    elif interval is not None and code[:1] in "PSDrn":
        lo, hi = figure(interval["lo"]), figure(interval["hi"])
        span = lo if interval["lo"] == interval["hi"] else f"{lo}–{hi}"
        proof = ("exact, solver-trusted" if interval.get("solver_trusted") else "exact") if interval.get("certified") \
            else "outer bound"
        how = "can tell, at the protection's confidence (not a proof), that the count" if code[:1] == "n" else \
            "can prove it"
        words = f"{words}; an attacker {how} lies in [{lo}, {hi}] ({proof})"
        text = f"{text} [{span}]".strip() if code[:1] in "rn" else f"[{span}]"
    elif code[:1] in "PSD":
        text = "(D)"
    return {"css": css, "text": text, "title": words if code[:1] not in "p" else ""}


def _grid_tables(tables: list[Mapping], unit: Mapping, cell_labels: Mapping[str, str]) -> list[dict]:
    """The unit's published tables as grids: a cross-classified table as rows (every axis but the last)
    by columns (the last axis), any other table as one column per statistic."""
    grid, intervals = unit.get("grid") or {}, unit_intervals(unit)
    out = []
    for t in tables:
        stats = t.get("stats") or ["count"]

        def cells(cid: str) -> list[dict]:
            key = f"{t['id']}:{cid}"
            codes = (grid.get(key) or "").split()
            return [dict(_grid_cell(c, intervals.get(key) if i == 0 else None), k=cid, stat=stats[i] if i < len(stats) else "")
                    for i, c in enumerate(codes)]

        axes = t.get("by") or []
        if len(axes) >= 2 and len(stats) == 1:
            cols = axes[-1]["codes"]
            rows, index = [], {}
            for cid in t["cells"]:
                parts = cid.split(",")
                head = tuple(parts[:-1])
                if head not in index:
                    labels = {a["column"]: dict(map(tuple, a["codes"])) for a in axes[:-1]}
                    index[head] = len(rows)
                    rows.append({"label": ", ".join(labels[a["column"]].get(c, c) for a, c in zip(axes[:-1], head)),
                                 "cells": {}})
                rows[index[head]]["cells"][parts[-1]] = cells(cid)
            body = [{"label": r["label"], "cells": [(r["cells"].get(code) or [None])[0] for code, _ in cols]}
                    for r in rows]
            head_row = [label for _, label in cols]
            corner = f"{' × '.join(a['title'] for a in axes[:-1])} ↓ · {axes[-1]['title']} →"
        else:
            labels = {a["column"]: dict(map(tuple, a["codes"])) for a in axes}
            body = []
            for cid in t["cells"]:
                if axes:
                    label = ", ".join(labels[a["column"]].get(c, c) for a, c in zip(axes, cid.split(",")))
                else:
                    label = cell_labels.get(f"{t['id']}:{cid}", cid).split(": ", 1)[-1]
                body.append({"label": label, "cells": cells(cid) or [None] * len(stats)})
            head_row = stats
            corner = " × ".join(a["title"] for a in axes) or "Cell"
        counts: dict[str, int] = {}
        for row in body:
            for c in row["cells"]:
                if c is not None and c["css"] != "s-pub":
                    counts[c["css"]] = counts.get(c["css"], 0) + 1
        out.append({"id": t["id"], "title": t.get("title") or t["id"], "corner": corner, "head": head_row,
                    "rows": body, "counts": counts, "open": bool(set(counts) & HIDDEN)})
    if out and not any(t["open"] for t in out):  # nothing hidden (e.g. every count rounded or noisy): show one
        out[0]["open"] = True
    return out


def unit_grids(doc: Findings, indices: list[int], rows: list[dict], cell_labels: Mapping[str, str]) -> dict | None:
    """The published tables of the units whose grid findings.json kept, riskiest first."""
    tables = doc.tables or []
    if not tables or not indices:
        return None
    rank = {r["index"]: i for i, r in enumerate(rows)}
    out = []
    for i in sorted(indices, key=lambda i: (rank.get(i, len(rank)), i)):
        u = doc.units[i]
        grids = _grid_tables(tables, u, cell_labels)
        hidden: dict[str, int] = {}
        for g in grids:
            for css, n in g["counts"].items():
                hidden[css] = hidden.get(css, 0) + n
        out.append({"geo": u["geo"], "level": u.get("level", ""), "rows": u.get("rows"), "tables": grids,
                    "counts": hidden})
    present = {css for g in out for css in g["counts"]} | {"s-pub"}
    legend = [(css, words) for css, words in dict.fromkeys(GRID_STATUS.values()) if css in present]
    return {"units": out, "legend": legend}
