"""The findings as a typed, versioned value: :class:`Findings` (with :class:`Summary`), written and read
as findings.json in format :data:`FORMAT` (docs/findings.md).

Every top-level key is a field, in the order the file holds them; ``to_json`` gives that document and
``from_json`` reads it back, refusing another format. Units stay JSON objects inside a sequence that
may be lazy (:class:`audit.findings.lines.JsonLines`: read from the file one at a time), so a run
of 8,530 units is never in memory whole; checks are :class:`audit.policy.verdict.Check` values,
decoded one at a time from the same kind of sequence. A :class:`Findings` is also a read-only
mapping over its JSON document (``doc["summary"]`` is the summary's JSON object), for readers of
the plain document.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Iterator, Sequence

from ..errors import AuditError, InternalError
from .lines import JsonLines
from ..policy.rules import Rules, judge
from ..policy.verdict import VERDICTS, Check, Failing, Judgement

FORMAT = 3
NOTICE = ("CONFIDENTIAL: this file contains records reconstructed from confidential microdata. "
          "Handle it as the microdata itself.")
TOTALS = ("verified", "undecided", "refuted", "verified_singletons", "derived_singletons", "explained_singletons",
          "minimal_explanations", "full_records")


@dataclass(frozen=True)
class Summary:
    """Totals over units: every unit's exact counts summed (the document's ``summary``)."""

    verified: int = 0
    undecided: int = 0
    refuted: int = 0
    verified_singletons: int = 0
    derived_singletons: int = 0
    explained_singletons: int = 0
    minimal_explanations: int = 0
    full_records: int = 0
    units: int = 0
    units_reconstructed: int = 0
    units_with_derived_singletons: int = 0
    singletons_by_columns: Mapping[str, Mapping[str, int]] = field(
        default_factory=lambda: {"derived": {}, "direct": {}})

    def __post_init__(self):
        for f in fields(self)[:-1]:
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise InternalError(f"summary.{f.name} is {v!r}, not a count")

    @classmethod
    def of(cls, units: Sequence[Mapping]) -> "Summary":
        """Every unit count summed, in one pass over the units."""
        total = dict.fromkeys(TOTALS, 0)
        total.update(units=0, units_reconstructed=0, units_with_derived_singletons=0)
        by_columns: dict[str, dict[str, int]] = {"derived": {}, "direct": {}}
        for u in units:
            s = u["summary"]
            for k in TOTALS:
                total[k] += s.get(k, 0)
            total["units"] += 1
            total["units_reconstructed"] += bool(u["reconstructed"])
            total["units_with_derived_singletons"] += s["derived_singletons"] > 0
            for kind, counts in s["singletons_by_columns"].items():
                for k, n in counts.items():
                    by_columns[kind][k] = by_columns[kind].get(k, 0) + n
        return cls(**total, singletons_by_columns={kind: dict(sorted(c.items(), key=lambda kv: int(kv[0])))
                                                    for kind, c in by_columns.items()})

    def to_json(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: Mapping) -> "Summary":
        return cls(**{f.name: data[f.name] for f in fields(cls)})


# keys present only in some runs: absent from the document (not null) when None
OPTIONAL = ("scale", "published", "unavailable", "attacks", "extras_left_out", "versions", "run", "outputs",
            "certificates", "unit_files")


@dataclass(frozen=True, eq=True)
class Findings(Mapping):
    """A findings document: the exact attack's results for every unit, and the rules' verdict on them.

    Fields are the top-level keys of findings.json, in its order (docs/findings.md, "Top level");
    ``units`` and ``checks`` come last, one per line on disk. ``verdict`` is None until the rules are
    applied (:meth:`judged`).
    """

    tool: Mapping[str, str]
    inputs: Mapping[str, Any]
    options: Mapping[str, Any]
    summary: Summary
    schema: Mapping[str, Any]
    cell_labels: Mapping[str, str]
    tables: Sequence[Mapping]
    claim_store: Mapping[str, Any] | None
    seconds: float
    created: str
    reidentification: Mapping[str, Any]
    units: Sequence[Mapping]
    format: int = FORMAT
    notice: str = NOTICE
    confidential: bool = True
    verdict: str | None = None
    rules: Mapping[str, Any] | None = None
    failing: tuple[Failing, ...] = ()
    warnings: tuple[Failing, ...] = ()
    scale: Mapping[str, Any] | None = None
    published: Mapping[str, Any] | None = None
    unavailable: Sequence[Mapping] | None = None
    attacks: Sequence[str] | None = None
    extras_left_out: Sequence[str] | None = None
    versions: Mapping[str, str] | None = None
    run: Mapping[str, Any] | None = None
    outputs: Mapping[str, str] | None = None
    certificates: Mapping[str, str] | None = None
    unit_files: Mapping[str, Any] | None = None  # units and checks in side files (audit.findings.sidefile)
    checks: Sequence[Check] = ()

    KEYS = ("format", "notice", "confidential", "tool", "inputs", "options", "verdict", "summary", "schema",
            "cell_labels", "tables", "claim_store", "seconds", "created", "reidentification", "rules", "failing",
            "warnings", *OPTIONAL, "units", "checks")  # the document's order

    def __post_init__(self):
        if self.format != FORMAT:
            raise InternalError(f"findings of format {self.format}; this version writes format {FORMAT}")
        if not isinstance(self.summary, Summary):
            raise InternalError(f"findings summary is a {type(self.summary).__name__}, not a Summary")
        if self.verdict is not None and self.verdict not in VERDICTS:
            raise InternalError(f"findings verdict {self.verdict!r}, not one of {VERDICTS}")
        if (self.verdict is None) != (self.rules is None):
            raise InternalError("findings with a verdict and no rules, or rules and no verdict")
        if not isinstance(self.checks, JsonLines):
            object.__setattr__(self, "checks", tuple(self.checks))
        object.__setattr__(self, "failing", tuple(self.failing))
        object.__setattr__(self, "warnings", tuple(self.warnings))

    # -- the rules ------------------------------------------------------------------------------------
    def judged(self, rules: Rules, rank: Mapping | None = None, linear: Mapping | None = None) -> "Findings":
        """These findings with the verdict of ``rules`` (and the ranking / linear results); the checks are
        kept on disk, like the units, when the units are."""
        keep = _on_disk if isinstance(self.units, JsonLines) else tuple
        return self.with_judgement(judge(self.units, self.reidentification, rules, rank, linear, keep))

    def with_judgement(self, j: Judgement) -> "Findings":
        return replace(self, verdict=j.verdict, rules=j.rules, failing=j.failing, warnings=j.warnings,
                       checks=j.checks)

    # -- JSON -----------------------------------------------------------------------------------------
    def _json(self, key: str) -> Any:
        value = getattr(self, key)
        if key == "summary":
            return value.to_json()
        if key in ("failing", "warnings"):
            return [f.to_json() for f in value]
        if key == "checks":  # a lazy sequence: its JSON objects, still read one at a time
            return value.raw() if isinstance(value, JsonLines) else [c.to_json() for c in value]
        return value

    def to_json(self) -> dict:
        """The findings.json document (units and checks as sequences of JSON objects, lazy when theirs are)."""
        return {k: self._json(k) for k in self.KEYS if not (k in OPTIONAL and getattr(self, k) is None)}

    @classmethod
    def from_json(cls, data: Mapping, where: str = "findings") -> "Findings":
        """Findings from their document; a document of another format, or without a key this format
        has, is the user's error naming ``where`` (the file)."""
        if "units" not in data or "summary" not in data:
            raise AuditError("not a findings file (no 'units' or 'summary')", where,
                             "pass the findings.json written by audit run")
        if data.get("format", 1) != FORMAT:
            raise AuditError(f"findings file in format {data.get('format', 1)}; this version of disclosure-audit "
                             f"reads format {FORMAT}", where,
                             "run audit run (or audit gate) again on the same inputs to write it in this format")
        unknown = [k for k in data if k not in cls.KEYS]
        missing = [f.name for f in fields(cls) if f.name not in data and f.name not in OPTIONAL
                   and f.name not in ("verdict", "rules", "failing", "warnings", "checks")]
        if unknown or missing:
            raise AuditError(f"findings file with {'unknown key ' + repr(unknown[0]) if unknown else 'no ' + repr(missing[0])}",
                             where, "pass the findings.json written by audit run, unchanged")
        try:
            summary = Summary.from_json(data["summary"])
        except (KeyError, TypeError, InternalError) as exc:
            raise AuditError(f"findings summary is not complete ({exc})", where,
                             "pass the findings.json written by audit run, unchanged") from None
        checks = data.get("checks") or ()
        values = {k: data[k] for k in data if k not in ("summary", "failing", "warnings", "checks")}
        return cls(**values, summary=summary,
                   failing=tuple(Failing.from_json(f) for f in data.get("failing") or ()),
                   warnings=tuple(Failing.from_json(w) for w in data.get("warnings") or ()),
                   checks=checks.decoded(Check.from_json) if isinstance(checks, JsonLines)
                   else [Check.from_json(c) for c in checks])

    # -- a read-only mapping over the JSON document ---------------------------------------------------
    def __getitem__(self, key: str) -> Any:
        if key not in self.KEYS or (key in OPTIONAL and getattr(self, key) is None):
            raise KeyError(key)
        return self._json(key)

    def __iter__(self) -> Iterator[str]:
        return (k for k in self.KEYS if not (k in OPTIONAL and getattr(self, k) is None))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    __hash__ = None  # holds lists and dicts


def _on_disk(checks: Iterator[Check]) -> JsonLines:
    """Checks kept in a temporary file, read back as :class:`Check` values."""
    return JsonLines.write(c.to_json() for c in checks).decoded(Check.from_json)
