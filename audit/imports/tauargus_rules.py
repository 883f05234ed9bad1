"""tau-Argus's ``<SAFETYRULE>`` mapped onto the schedule (the frequency rule suppresses) and our policy
(small_cells, dominance, p_percent, pq_rule, protection_levels); what has no counterpart is noted."""
from __future__ import annotations

from .tauargus_files import TableSpec
from .written import Imported

MAPPED = ("small_cells", "dominance", "p_percent", "pq_rule", "protection_levels")


def _number(x: float) -> int | float:
    return int(x) if x == int(x) else x


def table_rules(spec: TableSpec, table: dict, imported: Imported) -> dict:
    """The policy one table's rules ask for (rule id -> settings), its frequency rule set on ``table`` as
    ``protection.suppress_below``; rules with no counterpart go to ``imported``'s notes."""
    where = spec.rules_where or spec.where
    want: dict = {}
    if not spec.rules_where:
        imported.note(f"{spec.where}: table {table['id']} has no <SAFETYRULE>: only the a-priori statuses protect it")
    for rule in spec.rules:
        args = rule.args
        off = all(a == 0 for a in args[:1]) if rule.name in ("FREQ", "P", "ZERO") else \
            rule.name == "NK" and (args[0] == 0 or args[1] == 0)
        if rule.name in ("WGT", "MIS"):
            if args[0] == 1:
                imported.note(f"{where}: {rule.name}(1) is not mapped ("
                              + ("tables are unweighted)" if rule.name == "WGT" else "missing codes are ordinary "
                                                                                    "codes here)"))
            continue
        if off:
            continue
        holding = rule.index >= (1 if rule.name == "FREQ" else 2)
        if holding:
            imported.note(f"{where}: {rule.name}{_args(args)} applies at the holding level: not mapped")
        elif rule.name == "FREQ":
            n, margin = int(args[0]), args[1]
            if n >= 2:
                table["protection"] = {"suppress_below": n}
                want["small_cells"] = {"threshold": n} if n <= 10 else None
                if n > 10:
                    imported.note(f"{where}: FREQ({n}) suppresses counts below {n} in the schedule; the policy's "
                                  "small_cells threshold goes up to 10, so it is not set from it")
            if margin > 0:
                share = _number(round(margin / 100, 4))
                want["protection_levels"] = {"upper_share": share, "lower_share": share, "upper": 1, "lower": 1}
        elif rule.name == "NK":
            n, k = int(args[0]), _number(args[1])
            if "dominance" in want:
                imported.note(f"{where}: the second NK{_args(args)} is not mapped: the policy has one (n,k) rule")
            elif not 1 <= n <= 10 or not 0 < k <= 100:
                imported.note(f"{where}: NK{_args(args)} is not mapped: dominance takes n 1..10 and k up to 100")
            else:
                want["dominance"] = {"n": n, "k": k}
        elif rule.name == "P":
            p = _number(args[0])
            q, n = (100, int(args[1]) if len(args) > 1 else 1) if len(args) < 3 else (_number(args[1]), int(args[2]))
            rid = "p_percent" if q == 100 else "pq_rule"
            if n != 1:
                imported.note(f"{where}: P{_args(args)} is not mapped: our p% and pq rules take one intruder (n = 1)")
            elif rid in want:
                imported.note(f"{where}: the second P{_args(args)} is not mapped: the policy has one {rid} rule")
            elif not 0 < p <= 100 or not p <= q <= 100:
                imported.note(f"{where}: P{_args(args)} is not mapped: p must be in (0, 100] and q from p to 100")
            else:
                want[rid] = {"p": p} if rid == "p_percent" else {"p": p, "q": q}
        else:
            imported.note(f"{where}: {rule.name}{_args(args)} is not mapped"
                          + (": zero cells are not made unsafe" if rule.name == "ZERO" else ""))
    return {rid: (settings, where) for rid, settings in want.items() if settings is not None}


def _args(args: tuple) -> str:
    return "(" + ",".join(str(_number(a)) for a in args) + ")"


def policy(wanted: list[dict], imported: Imported) -> None:
    """Set ``imported.rules`` from every table's rules: a rule no table asks for is off (protection levels
    keep our default), one asked for is on with its settings and ``action: fail``; tables that ask for
    different settings get the first one's (the policy applies to every table), noted."""
    for rid in MAPPED:
        asked = [w[rid] for w in wanted if rid in w]
        if not asked:
            if rid != "protection_levels":
                imported.rules[rid] = False
            continue
        settings, where = asked[0]
        imported.rules[rid] = {**settings, "action": "fail"}
        for other, there in asked[1:]:
            if other != settings:
                imported.note(f"{there}: {rid} {other} differs from {where}'s {settings}; the policy applies "
                              f"{settings} to every table")
    imported.note("the policy's other rules (derived_singletons, full_records, undecided, ...) are our defaults: "
                  "tau-Argus has no counterpart; edit rules.yaml to change them", True)
