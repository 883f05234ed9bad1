"""Protection recommender: the least suppression (or rounding, or noise) that defeats the proved claims.

Suppression is *reconstruction-aware* (an implicit-hitting-set loop, per geographic unit):

1. forced cells: published exact counts the ``small_cells`` rule fails (primary suppression) and
   the complementary cells that keep them from exact recovery in tables with margins
   (:func:`audit.protection.suppress.simple_heuristic`, in the spirit of sdcTable's SIMPLEHEURISTIC);
2. attack the unit with those cells suppressed (:func:`audit.attacks.exact.audit_unit`; a suppressed cell
   becomes the interval [0, N]: the protected schedule names the cells, so the attacker knows they
   are not threshold suppressions); every failing claim (by the rules) gets its explanation, a
   minimal set of published cells that implies it, and adds the clause "suppress one of these";
3. a minimum hitting set of all clauses so far (MaxSAT, RC2; fewest cells, then fewest persons in
   them) is the next candidate; repeat until the attack finds no failing claim.

Every explanation stays valid when other cells are suppressed, so the loop only ever excludes
sets that fail: with the exact hitting set the result is a minimum number of cells (for the
claims the attack considers, i.e. up to ``--max-columns``). That holds too for the clauses that are
not minimal explanations (past the explanation budget, a checked linear proof's cells, else every
published cell: sets that imply the claim, only weaker); one explanation solver serves all of a
unit's rounds (:class:`audit.protection.claims.Explanations`). A recommendation is only offered after
re-auditing the protected schedule through the ordinary path (tabulate, problems, attack, rules).

Noise is evaluated in an *attacker-at-confidence* model, not a proof: a count published with
Laplace noise of scale b is known to the attacker to within ±z·b, z = ln(1/α), which holds for each
cell with probability 1-α. The interval is centred on the true count (the attacker's interval when
the draw is zero; it never excludes the truth).
"""
from __future__ import annotations

import time
from itertools import chain
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Callable

from ..attacks.exact import ExactOptions
from ..inputs import Inputs
from ..specs.schedule import load_schedule
from ..paths import clear_outputs
from ..attacks.reidentify import with_attacker
from ..findings.certfile import FILE as CERTIFICATES_FILE
from ..findings.claimstore import FILE as STORE_FILE
from ..findings.document import cell_labels
from ..findings.files import write_json
from ..findings.provenance import content_digest
from ..outputs.progress import Progress
from ..outputs.words import plural
from ..problem.coupled import coupled_levels
from .group import Search, count_groups, groups, protect_group
from .options import Policy, ProtectOptions, kept
from .protected import protected_schedule, write_schedule_yaml
from .release_files import WRITES as RELEASE_WRITES, Reasons, clear_release, write_release
from .results import Results, gathered, remade
from .resume import PARTIAL, finished, run_key
from .sweeps import _noise, _round_sweep, _sweep_failing

OUTPUTS = ("protected.yaml", "protection.json", PARTIAL, "findings.json", CERTIFICATES_FILE)  # what a run writes: an earlier run's are removed first
WRITES = (*OUTPUTS, *RELEASE_WRITES, STORE_FILE, "noisy_release.csv", "rank.json", "rank.svg", "*.tmp")  # all it may write


def audited(inputs: Inputs, exact: ExactOptions, rules, label: str, progress: bool = False,
            out: Path | None = None, *, pool) -> dict:
    """``audit run`` at scale on ``pool`` (:meth:`audit.scale.protect.ProtectPool.audit`) with units done / total
    and the ETA shown under ``label``; claim store in ``out`` if given. The units' findings stream through
    parts on disk, so the document holds none of them in memory."""
    with Progress(label, quiet=not progress) as bar:
        return pool.audit(
            inputs, exact, rules, out, lambda u, done, n: bar.update(done, u["geo"], key=(u["level"], u["geo"])),
            lambda n, done: bar.total(n, done))


def reaudit(inputs: Inputs, schedule_path: Path, exact: ExactOptions, rules, progress: bool = False,
            out: Path | None = None, *, pool) -> dict:
    """``audit run`` on the protected schedule (the inputs' rows read once): the findings document, with the
    rules' verdict."""
    protected = Inputs(inputs.schema, load_schedule(schedule_path, inputs.schema), inputs.frame, inputs.data_path)
    return audited(protected, exact, rules, "re-audit: units", progress, out, pool=pool)


def audit_pattern(inputs: Inputs, exact: ExactOptions, rules, out: Path, progress: bool = False, *, pool) -> dict:
    """``audit protect --audit-only``: the schedule's own suppression pattern audited as it stands (the
    peers' "Audit"): no new suppression is searched for. Writes findings.json and the claim store to
    ``out``; the document carries every hidden count's feasibility interval and the rules' verdict."""
    doc = audited(inputs, with_attacker(exact, inputs.schema, rules), rules, "audit: units", progress, out, pool=pool)
    write_json(doc, out / "findings.json")
    return doc


def _failing_units(doc: dict) -> list[str]:
    return sorted({c["unit"] for c in doc.get("checks", ()) if c["outcome"] == "fail"})


def protect(inputs: Inputs, options: ProtectOptions, rules, out: Path,
            log: Callable[[str], None] | None = None, progress: bool = False, resume: bool = False,
            *, pool) -> dict:
    """Attack, protect and re-audit; write protected.yaml, protection.json, findings.json and
    claims.csv.gz to ``out``; with ``progress``, show units done / total of each stage on stderr. With
    ``resume``, the units and parent units an interrupted run of the same inputs, options and rules
    finished (its ``protection.partial.json``) are taken as they are.

    ``pool`` (:class:`audit.scale.protect.ProtectPool`, made by the caller: this stage does not import scale)
    runs the audits' units (``pool.audit(exact)``: a ``run_units`` for :func:`~audit.findings.document.run_exact`)
    and, unless ``pool.local`` (everything in this process), the search's tasks (``pool.search(tasks, search,
    record)``: :func:`~audit.protection.group.protect_group` on each (group, None, index), ``record(result,
    index)`` as each finishes). The pattern does not depend on it: every task is searched alone and the
    results are put in the tasks' order."""
    start = time.perf_counter()
    policy = Policy.from_rules(rules)
    options = replace(options, exact=with_attacker(options.exact, inputs.schema, rules))
    params = {k: v for k, v in asdict(options).items() if k != "exact"} | {"exact": asdict(options.exact) | {
        "attacker": options.exact.attacker and options.exact.attacker.describe()}}
    key = run_key(inputs, {"parameters": params, "rules": rules.to_dict()})
    units_done, levels_done = finished(out, key) if resume and options.strategy == "suppress" else ({}, {})
    if resume and log and not units_done and not levels_done:
        log(f"--resume: no interrupted run of these inputs, options and rules in {out}; starting afresh")
    clear_outputs(out, OUTPUTS)  # nothing from an earlier run may pass for this one's
    clear_release(out)
    before = audited(inputs, options.exact, rules, "audit: units", progress, pool=pool)
    failing_units = set(_failing_units(before))
    report: dict[str, Any] = {
        "strategy": options.strategy,
        "parameters": params,
        "policy": asdict(policy), "rules": rules.to_dict(),
        "inputs": {"data": inputs.data_path, "schema": inputs.schema.source, "tables": inputs.schedule.source},
        "before": {"verdict": before["verdict"], "summary": before["summary"], "failing": before["failing"]},
        "attacker_model": ("a cell suppressed by this recommendation is known to the attacker to be suppressed and "
                           "lies in [0, N]; cells suppressed by the schedule's threshold keep the interval the "
                           "schedule implies ([1, t-1], [0, t-1] with protect_zeros, without complementary "
                           "suppression, else [0, N]); where that is one value (suppress_below: 2 hides only 1s) "
                           "the cell is published to the attacker, and listed here when a rule fails it"),
    }
    sched_path = out / "protected.yaml"
    if options.strategy == "suppress":
        out.mkdir(parents=True, exist_ok=True)
        results, stopped = Results(out), {"units": [], "levels": []}  # on disk as they finish; a task stopped here
        tasks = groups(inputs, failing_units, units_done, levels_done)  # made as the workers take them
        (n_tasks, todo), coupled = count_groups(inputs, failing_units), bool(coupled_levels(inputs.schema, inputs.schedule))

        def interrupted(stage: str) -> ProtectInterrupted:
            partial = out / PARTIAL
            done = ({k: [d for r in results.finished() for d in r[k]] + stopped[k] for k in ("units", "levels")}
                    if stage == "search" else {"units": list(units), "levels": levels})  # as they came; else in order
            kept = {"resume_key": key, **done}
            write_json({**report, "interrupted": True, "stage": stage, "units_total": todo, **kept,
                        "resume_sum": content_digest(kept)}, partial)
            return ProtectInterrupted(len(kept["units"]), todo, partial, len(kept["levels"]))
        try:
            with Progress("protect: units", quiet=not progress) as bar:
                bar.total(n_tasks)

                def record(result: dict, index: int) -> None:
                    results.add(index, result)
                    if log and not pool.local:  # the workers' own lines stay in the workers
                        for d in result["units"] + result["levels"]:
                            log(f"{d['level']} {d['geo']}: {d['status']}, {len(d['cells'])} cells")
                    bar.update(note=", ".join(d["geo"] for d in result["units"][:1]))
                search = Search(policy, options, rules, content_digest(key))
                if pool.local:
                    for i, g in enumerate(tasks):
                        current: dict = {"units": [], "levels": []}
                        try:
                            result = protect_group(g, search, log, current)
                        except KeyboardInterrupt:  # keep what the task finished
                            stopped.update(current)
                            raise
                        record(result, i)
                else:
                    pool.search(((g, None, i) for i, g in enumerate(tasks)), search, record)
        except KeyboardInterrupt:
            stop = interrupted("search")
            results.close()
            raise stop from None
        try:  # the tasks' order, whatever order they finished in; the units' entries stay on disk
            found = gathered(results, out)
        finally:
            results.close()
        units, levels = found["units"], found["levels"]
        report["units"] = units
        if levels:
            report["levels"] = levels
        elif coupled:
            report["levels"] = []
        report["failing_units"] = {d["geo"]: d["failing_rules"] for d in units
                                   if not kept(d["status"], d.get("undefeatable"))}
        report["failing_units"].update({d["geo"]: [f"{r} (coupled with its child units)" for r in d["failing_rules"]]
                                        for d in levels if not kept(d["status"], d.get("undefeatable"))})
        report["undefeatable"] = {d["geo"]: {k: d.get(k) for k in ("level", "failing_rules", "undefeatable", "remedy")}
                                  for d in chain(units, levels) if d.get("undefeatable")}
        report["pinned_by_rule"] = found["pinned_by_rule"]
        report["suppress"] = suppress = found["suppress"]
        labels = cell_labels(inputs.schedule)
        report["cell_labels"] = {k: labels.get(k, k) for cells in suppress.values() for k in cells}
        if report["failing_units"]:
            report["reason"] = (f"the search found no passing pattern in {len(report['failing_units'])} of "
                                f"{len(units) + len(levels)} units")
        else:
            header = (f"Protected by `audit protect --strategy suppress` from {inputs.schedule.source}.\n"
                      "suppress: cells hidden in one geographic unit only (the attacker sees them as [0, N]);\n"
                      "with complementary suppression, every cell the unit hides, so re-tabulating adds none."
                      + "".join(f"\nStill failing, whatever is suppressed: {geo} (see protection.json)"
                                for geo in report["undefeatable"]))
            write_schedule_yaml(inputs.schedule.source, sched_path, suppress, header=header)
        report["totals"] = {
            "units_protected": sum(d["status"] == "protected" for d in units),
            "units_not_protected": [d["geo"] for d in chain(units, levels) if d["status"] not in ("protected", "pass")],
            "cells_suppressed": sum(len(d["cells"]) for d in chain(units, levels)),
            "persons_in_suppressed_cells": found["persons"],
        }
    elif options.strategy == "round":
        report["sweep"], base = _round_sweep(inputs, options, policy, failing_units, log, rules)
        report["round_to"] = base
        if base is None:
            report["reason"] = f"no base in {list(options.round_bases)} meets the rules"
            report["failing_units"] = _sweep_failing(report["sweep"])
        else:
            write_schedule_yaml(inputs.schedule.source, sched_path, round_to=base,
                                header=f"Protected by `audit protect --strategy round`: counts rounded to base {base}.")
    else:
        report.update(_noise(inputs, options, policy, failing_units, out, log, rules))
        if report.get("scale") is None:
            report["failing_units"] = _sweep_failing(report["sweep"])
        else:
            write_schedule_yaml(inputs.schedule.source, sched_path,
                                header="Strategy noise: the tables are unchanged here; publish them with the Laplace "
                                       "noise scale in protection.json (noise is not a schedule option).")
    if options.strategy in ("suppress", "round") and sched_path.exists():
        try:
            after = reaudit(inputs, sched_path, options.exact, rules, progress, out, pool=pool)
        except KeyboardInterrupt:  # a protected.yaml not re-audited is no recommendation
            sched_path.unlink(missing_ok=True)
            if options.strategy == "suppress":
                raise interrupted("re-audit") from None
            raise
    else:
        after = report.pop("_after", None) or before
    write_json(after, out / "findings.json")
    report["after"] = {"verdict": after["verdict"], "summary": after["summary"], "failing": after["failing"]}
    stands = options.strategy == "suppress" and sched_path.exists() and _reaudited(report, after, out)
    report["recommendation"] = _recommendation(options, report, after, stands)
    if report["recommendation"] is None:  # protected.yaml is written only for a pattern that passes
        sched_path.unlink(missing_ok=True)
        report.setdefault("reason", "the re-audit of the protected schedule does not pass the rules")
        if "failing_units" not in report:  # the rounding passed, its re-audit did not
            report["failing_units"] = {}
            for c in (c for c in after.get("checks", ()) if c["outcome"] == "fail"):
                report["failing_units"].setdefault(c["unit"], []).append(c["rule"])
    elif sched_path.exists() and options.strategy in ("suppress", "round"):  # the release as published
        suppress = {k: frozenset(v) for k, v in report.get("suppress", {}).items()}
        published = protected_schedule(inputs.schedule, suppress, report.get("round_to"))  # protected.yaml's
        why = Reasons(report, before) if options.strategy == "suppress" else None
        report["release_files"] = [str(p) for p in write_release(inputs, published, after, out, rules, why)]
    report["seconds"] = round(time.perf_counter() - start, 3)
    write_json(report, out / "protection.json")
    return report


class ProtectInterrupted(Exception):
    """Ctrl-C during ``audit protect``: the units (and parent units) protected so far are kept in a
    partial file, which ``--resume`` continues from."""

    def __init__(self, done: int, total: int, path: Path, levels: int = 0):
        self.done, self.total, self.path = done, total, path
        more = f" and {levels} parent units with their child units" if levels else ""
        super().__init__(f"interrupted: {done} of {total} units protected{more}, kept in {path} (not a recommendation: "
                         "no protected schedule was written and nothing was re-audited; `--resume` continues from there)")


PINNED_NOTE = ("these cells are suppressed by the schedule's threshold, but the threshold leaves them one value "
               "(suppress_below: 2 hides only 1s), so to the attacker they are published: the recommendation lists "
               "them (a listed cell is [0, N]); or change the rule so that it hides more than one value "
               "(suppress_below: 3 or more, or protect_zeros: true) or add complementary: true")


def _reaudited(report: dict, after: dict, folder: Path | None = None) -> bool:
    """Each unit's status as the re-audit of protected.yaml finds it: a unit the search protected that the
    re-audit fails is ``fails-reaudit`` (``search_status`` keeps the search's), and ``failing_units`` holds
    every unit the re-audit fails but for those that fail only the rules no suppression satisfies there.
    True when those are all it fails (and nothing is undecided elsewhere): the pattern stands for the rest."""
    failed: dict[str, set] = {}
    for c in (c for c in after.get("checks", ()) if c["outcome"] == "fail"):
        failed.setdefault(c["unit"], set()).add(c["rule"])

    def marked(d: dict) -> dict:
        if d["geo"] in failed and d["status"] in ("protected", "pass"):
            d["search_status"], d["status"], d["failing_rules"] = d["status"], "fails-reaudit", sorted(failed[d["geo"]])
        return d
    report["units"] = remade(report["units"], marked, folder)  # the entries on disk are written anew
    remade(report.get("levels", []), marked)
    stuck = report.get("undefeatable", {})
    report["failing_units"] = {geo: sorted(rules) for geo, rules in failed.items()
                               if geo not in stuck or not rules <= set(stuck[geo]["failing_rules"])}
    undecided = sum(u["summary"].get("undecided", 0) for u in after.get("units", ()) if u["geo"] not in stuck)
    stands = bool(stuck) and not report["failing_units"] and not undecided
    if stands:
        report["reason"] = (f"the re-audit fails only in {plural(len(stuck), 'unit')} whose failing claims no suppression "
                            f"defeats ({', '.join(sorted(stuck))}); the pattern stands for the others")
    return stands


def _recommendation(options: ProtectOptions, report: dict, after: dict, stands: bool = False) -> dict | None:
    """Offered when the re-audit of the protected release passes the rules with nothing undecided, or
    (suppression, ``complete`` False) fails only where no suppression can help (:func:`_reaudited`)."""
    passes = after["verdict"] == "pass" and after["summary"].get("undecided", 0) == 0
    if not passes and not stands:
        return None
    if options.strategy == "suppress":
        out = {"strategy": "suppress", "cells": {geo: cells for geo, cells in report["suppress"].items() if cells},
               "cells_suppressed": report["totals"]["cells_suppressed"], "complete": passes} | (
                   {} if passes else {"still_failing": sorted(report["undefeatable"])})
        if report.get("pinned_by_rule"):
            out["pinned_by_rule"] = {"cells": report["pinned_by_rule"], "note": PINNED_NOTE}
        return out
    if options.strategy == "round":
        return {"strategy": "round", "round_to": report["round_to"]}
    return {"strategy": "noise", "scale": report.get("scale"), "epsilon": report.get("epsilon"),
            "model": "attacker at confidence (not a proof)"}
