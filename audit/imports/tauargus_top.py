"""A ``.tab``'s top contributors (``<MAXSCORE>`` columns) judged by the magnitude rules its batch file's
``<SAFETYRULE>`` asks for (NK as our dominance, P as our p% or pq rule), cell by cell at import: a published
release carries no contributors for ``audit run --published`` to judge."""
from __future__ import annotations

from pathlib import Path

from ..release.magnitude import MAGNITUDE_RULES, Contributions, sensitive
from .tauargus_files import TableSpec
from .tauargus_rules import _args, policy, table_rules
from .written import Imported, default_rules


def tab_rules(spec: TableSpec, tops: int, imported: Imported, name: str) -> list[tuple[str, dict]]:
    """Set ``imported.rules`` from ``spec``'s safety rules as the microdata import does (but the schedule
    suppresses nothing by FREQ: the .tab's statuses say what is hidden) and return the magnitude (rule,
    settings) pairs ``tops`` top contributions can decide; the rest go to the notes."""
    scratch = Imported({}, {})
    wanted = table_rules(spec, {"id": "T1"}, scratch)
    for line in scratch.notes:
        if "FREQ(" not in line:
            imported.notes.append(line)
    where = spec.rules_where or spec.where
    for rule in spec.rules:
        if rule.name == "FREQ" and rule.index == 0 and rule.args[0] >= 2:
            imported.note(f"{where}: FREQ{_args(rule.args)} judges the published counts (small_cells up to 10); the "
                          "schedule hides nothing by it: the .tab's <STATUS> column says which cells tau-Argus hid",
                          True)
    imported.rules = default_rules()
    policy([wanted], imported)
    imported.rules["name"] = f"tauargus-{Path(name).stem}"
    imported.rules["description"] = f"The safety rules of {Path(name).name} over a .tab, as far as our rules reach."
    out = []
    for rid in MAGNITUDE_RULES:
        if rid not in wanted:
            continue
        settings = wanted[rid][0]
        need = int(settings["n"]) if rid == "dominance" else 2
        if need > tops:
            imported.note(f"{where}: {rid} {settings} needs the {need} largest contributions of each cell; the "
                          f".tab gives {tops} (<MAXSCORE> columns): not judged")
        else:
            out.append((rid, settings))
    return out


def judge(rules: list[tuple[str, dict]], total: int, count: int, top: list[int]) -> str | None:
    """The first reason a cell of absolute ``total``, ``count`` contributors and ``top`` contributions is
    sensitive, or None."""
    contributions = Contributions.given(total, count, top)
    for rule, settings in rules:
        why = sensitive(rule, settings, contributions)
        if why:
            return f"{rule}: {why}"
    return None
