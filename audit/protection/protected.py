"""The protected schedule: per-unit suppressions or rounding added to a schedule, and ``protected.yaml``."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..release.constraints import SUPPRESSED, UnitRelease
from ..release.tabulate import tabulate
from ..specs.schedule import Protection, Schedule, rounds_to_zero


def pinned(release: UnitRelease) -> frozenset[str]:
    """The cells a unit's release hides in tables whose schedule reruns complementary suppression on
    every tabulation. Listed in protected.yaml beside the cells protect adds (and held hidden by its
    searches), they make the re-tabulation exactly the pattern protect verified: the heuristic only
    adds cells and stops where no line has one hidden cell alone, so on its own result it adds none
    (without them it could publish a cell it hid before, such as a count below the rule's threshold)."""
    return frozenset(v.cell.key for v in release.values if v.status == SUPPRESSED and _reruns(release.protection[v.cell.table]))


def pin(frame, schema, schedule: Schedule, suppress: dict[str, list[str]]) -> dict[str, list[str]]:
    """Each unit's cells (``suppress``: geo key -> cells protect adds) with every cell its release then
    hides in tables that rerun the heuristic (:func:`pinned`), as protected.yaml lists them. The
    searches held each unit's own such cells hidden, so they are added before tabulating."""
    if not reruns(schedule):
        return suppress
    original = {"/".join(r.geo): pinned(r) for r in tabulate(frame, schema, schedule)}
    held = {k: frozenset(v) | original.get(k, frozenset()) for k, v in suppress.items() if v}
    out = dict(suppress)
    for r in tabulate(frame, schema, protected_schedule(schedule, held)):
        if "/".join(r.geo) in held:
            out["/".join(r.geo)] = sorted(held["/".join(r.geo)] | pinned(r))
    return out


def reruns(schedule: Schedule) -> bool:
    """Whether a table of the schedule reruns complementary suppression on every tabulation (:func:`pinned`)."""
    return any(_reruns(t.protection) for t in schedule.tables)


def _reruns(protection: Protection) -> bool:
    return protection.complementary and protection.suppress_below is not None

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
    """``protected.yaml``: the original schedule document plus the protection (comments are not kept); read and
    written by libyaml where PyYAML has it (the same document and text, four times faster on sf1's schedule)."""
    import yaml

    from ..specs._yaml import FAST_LOADER

    doc = yaml.load(Path(source).read_text(encoding="utf-8"), Loader=FAST_LOADER)
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
    text = yaml.dump(doc, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False, allow_unicode=True,
                     width=120)
    out.write_text("".join(f"# {line}\n" for line in header.splitlines()) + text, encoding="utf-8")
