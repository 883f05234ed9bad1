"""The protected schedule: per-unit suppressions or rounding added to a schedule, and ``protected.yaml``."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..specs.schedule import Protection, Schedule, rounds_to_zero

def protected_schedule(schedule: Schedule, suppress: dict[str, frozenset] | None = None,
                       round_to: int | None = None) -> Schedule:
    """The schedule with extra per-unit suppressions, or every count table rounded to a base."""
    if round_to is not None:
        tables = tuple(replace(t, protection=_rounded(t.protection, round_to)) for t in schedule.tables)
        schedule = replace(schedule, tables=tables, protection=_rounded(schedule.protection, round_to))
    if suppress:
        merged = {k: frozenset(v) for k, v in (getattr(schedule, "suppress", {}) or {}).items()}
        for k, cells in suppress.items():
            merged[k] = merged.get(k, frozenset()) | frozenset(cells)
        schedule = replace(schedule, suppress=merged)
    return schedule


def _rounded(protection: Protection, base: int) -> Protection:
    """The protection with counts rounded to ``base``, and zeros protected where a threshold below
    half the base would make a published 0 ambiguous (see :class:`~audit.specs.schedule.Protection`)."""
    zeros = protection.protect_zeros or rounds_to_zero(protection.suppress_below, base)
    return replace(protection, round_to=base, protect_zeros=zeros)


def write_schedule_yaml(source: str, out: Path, suppress: dict[str, list[str]] | None = None,
                        round_to: int | None = None, header: str = "") -> None:
    """``protected.yaml``: the original schedule document plus the protection (comments are not kept)."""
    import yaml

    doc = yaml.safe_load(Path(source).read_text(encoding="utf-8"))
    if round_to is not None:
        default = doc.get("protection") or {}
        for spec, inherited in [(default, {})] + [(t["protection"], default) for t in doc["tables"]
                                                   if isinstance(t.get("protection"), dict)]:
            spec["round_to"] = round_to
            if rounds_to_zero({**inherited, **spec}.get("suppress_below"), round_to):
                spec["protect_zeros"] = True  # as _rounded does
        doc["protection"] = default
    if suppress:
        merged = {str(k): list(v) for k, v in (doc.get("suppress") or {}).items()}
        for k, cells in suppress.items():
            merged[k] = sorted(set(merged.get(k, [])) | set(cells))
        doc["suppress"] = merged
    out.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=120)
    out.write_text("".join(f"# {line}\n" for line in header.splitlines()) + text, encoding="utf-8")
