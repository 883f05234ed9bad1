"""``audit protect``: the least suppression, rounding or noise that defeats the proved claims, re-audited."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..attacks.exact import ExactOptions
from ..attacks.unit import UNIT_WORK
from ..errors import Halted
from ..protection.options import PROTECT_EXPLAIN_BUDGET
from ..protection.protect import WRITES, ProtectInterrupted, ProtectOptions, audit_pattern, protect as run_protect
from ..errors import AuditError
from ..outputs.words import claim_text
from ..peers.pattern import read_pattern, with_pattern
from ..policy.checks import pinned_words, too_narrow, unit_intervals
from ..protection.release_files import clear_release, protection_levels, write_pattern_release
from ..protection.remedies import remedies, remedy_lines
from ..policy.rules import load_rules
from ..scale.protect import ProtectPool
from ..scale.source import read_inputs
from ..outputs.terminal import echo
from ..outputs.words import plural
from . import DataArg, OutOpt, QuietOpt, SchemaOpt, SeedOpt, TablesOpt, named_file, output_folder
from .run import UnitSecondsOpt, UnitWorkOpt


def register(app: typer.Typer) -> None:
    @app.command()
    def protect(
        data: DataArg,
        tables: TablesOpt,
        schema: SchemaOpt = None,
        out: OutOpt = Path("protect-out"),
        rules: Annotated[Optional[str], typer.Option("--rules", "-r", help="Rules file or built-in name (default, strict, lenient).")] = None,
        strategy: Annotated[str, typer.Option("--strategy", help="suppress (reconstruction-aware cell suppression), round (smallest base), or noise (smallest Laplace scale).")] = "suppress",
        max_columns: Annotated[Optional[int], typer.Option("--max-columns", min=1, help="Largest number of columns in a claim (default: all).")] = None,
        hitting: Annotated[str, typer.Option("--hitting", help="Hitting set: exact (MaxSAT, fewest cells) or greedy.")] = "exact",
        exact_rounds: Annotated[int, typer.Option("--exact-rounds", min=1, help="Suppress: exact minimum hitting sets tried per unit before the search only adds cells to its last pattern (the result is then not proved minimal).")] = 40,
        cost: Annotated[str, typer.Option("--cost", help="Suppress: what a suppressed cell costs, cells, persons (its count) or values (its sum(col), else count); any but cells, or protection_levels in the rules, runs the joint secondary-suppression search.")] = "cells",
        primary: Annotated[bool, typer.Option("--primary/--no-primary", help="Suppress the published counts the small_cells rule fails.")] = True,
        complementary: Annotated[bool, typer.Option("--complementary/--no-complementary", help="Complementary suppression around them in tables with margins.")] = True,
        alpha: Annotated[float, typer.Option("--alpha", min=0, max=1, help="Noise: the attacker trusts each noisy count to within its 1-alpha interval.")] = 0.05,
        rank: Annotated[bool, typer.Option("--rank/--no-rank", help="Noise: re-run the ranking attack at the chosen scale (needs torch).")] = True,
        seed: SeedOpt = 0,
        conflicts: Annotated[int, typer.Option("--conflicts", min=1, help="Conflict budget per solver call; past it a claim is undecided.")] = 200_000,
        unit_seconds: UnitSecondsOpt = None,
        unit_work: UnitWorkOpt = UNIT_WORK,
        max_rows: Annotated[int, typer.Option("--max-rows", min=1, help="Units with more rows are reported undecided (too large).")] = 200,
        audit_only: Annotated[bool, typer.Option("--audit-only", help="Audit the schedule's own suppression pattern as given (feasibility intervals, rules); search for no new protection. Exit 0 pass, 1 fail.")] = False,
        pattern: Annotated[Optional[Path], typer.Option("--pattern", help="With --audit-only: audit this CSV of cell statuses (another tool's pattern: tau-Argus, sdcTable, GaussSuppression, SDMX, or protected.csv) instead of the schedule's own; see docs/peers.md.")] = None,
        pattern_status: Annotated[Optional[str], typer.Option("--pattern-status", help="The pattern's status column (default: the first known one: status, sdcStatus, suppressed, CONF_STATUS, tau_argus, ...).")] = None,
        pattern_table: Annotated[Optional[str], typer.Option("--pattern-table", help="The table the pattern's rows belong to (default: every table whose columns it has; a headerless tau-Argus file: its name).")] = None,
        resume: Annotated[bool, typer.Option("--resume", help="Suppress: continue the run Ctrl-C or SIGTERM stopped in OUT (its protection.partial.json; the same inputs, options and rules): the units it finished are kept.")] = False,
        workers: Annotated[int, typer.Option("--workers", min=1, help="Units (a parent unit with its child units as one) in parallel on a local process pool, for the audits and the search; the pattern is the same with any number.")] = 1,
        scheduler: Annotated[Optional[str], typer.Option("--scheduler", help="Run them on a Dask cluster at this address (needs the 'cluster' extra).")] = None,
        memory_mb: Annotated[Optional[int], typer.Option("--memory-mb", help="Memory per worker process (MB), capped there (RLIMIT_AS); a search task past it is undecided. Default: no cap, and with one worker everything runs in this process.")] = None,
        quiet: QuietOpt = False,
    ) -> None:
        """Recommend the least protection that makes the release pass the rules, and prove it by re-auditing."""
        if pattern is not None and not audit_only:
            raise AuditError("--pattern is audited, not protected", "--pattern", "add --audit-only")
        output_folder(out, inputs={"DATA": data, "--schema": schema, "--tables": tables,
                                   "--rules": named_file(rules), "--pattern": pattern}, writes=WRITES)
        pool = ProtectPool(workers, scheduler, memory_mb)
        # --audit-only of the schedule's own pattern streams a file sorted by geography (memory flat in the units)
        inputs = read_inputs(data, schema, tables, rows=not audit_only or pattern is not None)
        policy = load_rules(rules)
        exact = ExactOptions(max_columns=max_columns, seed=seed, conflicts=conflicts, unit_seconds=unit_seconds,
                             unit_work=unit_work, max_rows=max_rows, explain_budget=PROTECT_EXPLAIN_BUDGET)
        if audit_only:
            given = None if pattern is None else read_pattern(pattern, inputs, pattern_status, pattern_table)
            _audit_only(inputs if given is None else with_pattern(inputs, given), exact, policy, out, quiet, given, pool=pool)
            return
        options = ProtectOptions(strategy=strategy, exact=exact, hitting=hitting, exact_rounds=exact_rounds, cost=cost,
                                 primary=primary, complementary=complementary, alpha=alpha, rank=rank)
        log = None if quiet else (lambda msg: echo(msg, err=True))
        try:
            report = run_protect(inputs, options, policy, out, log, progress=not quiet, resume=resume, pool=pool)
        except ProtectInterrupted as exc:  # Ctrl-C or SIGTERM: exit 130 or 143 (audit.cli)
            raise Halted(str(exc)) from None
        rec = report["recommendation"]
        if not quiet:
            before, after = report["before"], report["after"]
            echo(f"before: {before['verdict']} ({plural(before['summary']['units_with_derived_singletons'], 'unit')} with "
                       f"derived singletons); after {strategy}: {after['verdict']}")
            if strategy == "suppress":
                labels, pinned = report["cell_labels"], report.get("pinned_by_rule") or {}
                for u in report["units"]:
                    echo(f"{u['geo']}: {_status(u)}, {plural(len(u['cells']), 'cell')} to suppress{_bound_note(u)}")
                    for cell in u["cells"]:
                        value = pinned.get(u["geo"], {}).get(cell)
                        echo(f"  {labels.get(cell, cell)} ({cell})" + ("" if value is None else
                             f": {pinned_words(value)}, listed so the attacker sees [0, N]"))
                    _undefeatable(u)
                for d in report.get("levels", ()):  # a tract with its blocks (BLOCK/TABLE:CELL)
                    echo(f"{d['geo']} ({d['level']}, with its child units): {_status(d)}, {len(d['cells'])} more cells to "
                         f"suppress{_bound_note(d)} ({_joint_note(d)})")
                    for cell in d["cells"]:
                        echo(f"  {labels.get(cell.rpartition('/')[2], cell)} ({cell})")
                    _undefeatable(d)
                t = report["totals"]
                where = sum(bool(cells) for cells in report["suppress"].values())  # blocks the tracts added to included
                echo(f"{plural(t['cells_suppressed'], 'cell')} suppressed in {plural(where, 'unit')} "
                           f"({t['persons_in_suppressed_cells']} persons in them)")
                for line in remedy_lines(report, remedies(inputs, report, exact, policy)):
                    echo(line)
            elif report.get("round_to") is not None:
                echo(f"round_to: {report['round_to']}")
            elif report.get("scale") is not None:
                echo(f"noise scale: {report['scale']} (epsilon {report.get('epsilon')}, alpha {alpha}; "
                           "attacker-at-confidence model, not a proof)")
            for geo, rules_left in (report.get("failing_units") or {}).items():
                echo(f"still failing in {geo}: {', '.join(rules_left) or 'undecided'}")
            if rec and not rec.get("complete", True):
                echo(f"Recommendation for every unit but {', '.join(rec['still_failing'])} (they still fail, whatever "
                     f"is suppressed: see above): {out / 'protected.yaml'}, {out / 'protection.json'}, "
                     f"{out / 'findings.json'}")
            elif rec:
                echo(f"Recommendation: {out / 'protected.yaml'}, {out / 'protection.json'}, {out / 'findings.json'}")
            if report.get("release_files"):
                echo(f"Release to publish: {out / 'protected.csv'} (statuses in tau-Argus, sdcTable and SDMX codes; "
                     f"tau-Argus files and .hst in {out / 'tauargus'}); suppressions to sign: {out / 'review.csv'}")
            if not rec:
                echo(f"No recommendation ({report.get('reason') or 'no pattern passes the rules'}; no protected.yaml "
                     f"written): {out / 'protection.json'}, {out / 'findings.json'}")
        if rec is None or report["after"]["verdict"] != "pass":  # a partial recommendation's release still fails
            raise typer.Exit(1)


def _status(unit: dict) -> str:
    """A unit's status as the re-audit found it (and the search's, where they differ)."""
    if unit["status"] == "fails-reaudit":
        return f"fails the re-audit ({', '.join(unit['failing_rules'])}; the search found it {unit['search_status']})"
    return "cannot be fully protected by suppression" if unit.get("undefeatable") else unit["status"]


def _undefeatable(unit: dict) -> None:
    """The claims of a unit that no suppression defeats, why, and what the agency can do instead."""
    for entry in unit.get("undefeatable", ()):
        echo(f"  still proved whatever is suppressed: {entry['claim']}")
        echo(f"    why: {entry['why']}")
    if unit.get("undefeatable"):
        echo(f"  instead: {unit['remedy']}")


def _bound_note(unit: dict) -> str:
    """Where a protected unit's pattern is not a proved minimum: the least cost any passing one has."""
    if unit["status"] != "protected" or unit.get("minimal", True):
        return ""
    bound = unit.get("lower_bound")
    return " (not proved minimal" + (f"; at least {bound:g} needed)" if bound is not None else ")")


def _joint_note(entry: dict) -> str:
    """What a parent unit's coupled problem was held to, and what it failed before and after."""
    def failed(summary: dict) -> str:
        parts = [f"{summary[k]} {what}" for k, what in (("failing_claims", "failing claims"),
                                                          ("intervals_too_narrow", "intervals too narrow")) if k in summary]
        return ", ".join(parts) or "not attacked"
    return (f"jointly: {', '.join(entry['rules'])}; before: {failed(entry.get('before') or {})}"
            + (f"; after: {failed(entry['after'])}" if entry.get("after") else ""))


def _audit_only(inputs, exact, policy, out: Path, quiet: bool, pattern=None, *, pool) -> None:
    """Print each unit's hidden cells with their intervals and the failing rules; exit 1 on fail. With
    another tool's ``pattern``: mark the cells it leaves pinned or narrow, list the claims the published
    cells prove, and write the release and review sheet in every form (:mod:`audit.peers.release`)."""
    clear_release(out)  # an earlier protect's release must not pass for this audit's
    doc = audit_pattern(inputs, exact, policy, out, progress=not quiet, pool=pool)
    levels = protection_levels(policy)
    if pattern is not None:
        write_pattern_release(inputs, pattern, doc, out, policy)
    if not quiet:
        for unit in doc["units"]:
            if unit.get("intervals_skipped"):
                echo(f"{unit['geo']}: {unit['intervals_skipped']}")
            intervals = unit_intervals(unit)
            narrow = too_narrow(levels, intervals) if pattern is not None else {}
            for cell, iv in intervals.items():
                mark = f" ({pinned_words(iv['value'])})" if iv.get("pinned") else \
                    "" if iv["certified"] else " (outer bound, not certified)"
                lo, hi = ({**iv, **iv.get("exact", {})}[k] for k in ("lo", "hi"))  # 110/3 rather than 36.666...
                verdict = ("" if cell not in narrow else
                           "  PINNED" if lo == hi else f"  NARROW (protection levels: {narrow[cell].rpartition(', ')[2]})")
                echo(f"{unit['geo']} {cell}: [{lo}, {hi}]{mark}{verdict}")
            if pattern is not None:
                for claim in unit.get("claims", ()):
                    if claim.get("status") == "verified" and not claim.get("direct"):
                        cells = ", ".join(claim.get("cells", ())) or "the published cells together"
                        echo(f"{unit['geo']} proved: {claim_text(claim, doc.get('schema') or {}, unit)} (from {cells})")
        if pattern is not None:
            echo(f"pattern {pattern.source} ({pattern.system} codes): {out / 'review.csv'}, {out / 'protected.csv'}")
        echo(f"{doc['verdict'].upper()} ({doc['rules']['name']} policy, {doc['summary']['units']} units): "
             f"{out / 'findings.json'}")
        for f in doc["failing"]:
            echo(f"FAIL {f['rule']}: {f['example']}")
    if doc["verdict"] == "fail":
        raise typer.Exit(1)
