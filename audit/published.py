"""A published release without microdata: read it, rebuild each unit's problem, and attack it.

The release file (the CSV ``audit tabulate`` writes, a simpler cell file, or a Census Bureau
reconstruction LP) is read back by :mod:`audit.release.published_file` into
:class:`~audit.release.constraints.UnitRelease` objects, from which
:func:`audit.problem.build.build_problems` (and :func:`audit.problem.coupled.build_coupled_problems` for
tables at a coarser level) build the same problems as from microdata, with no true rows.

Candidates come from the generate step of generate-then-verify (Liu et al.): one consistent dataset
found by the exact engine, whose claims are pruned by every enumerated and sampled dataset (seeded)
-- the claims true in all of them -- and then verified exactly as in a microdata audit. A claim
``R(a, m)`` with ``m >= 1`` true in every consistent dataset is true in the first one, so the
verified claims are the same set as a microdata audit's. What needs the confidential rows
(baseline probabilities, linkage, the ranking and linear attacks' scores) is reported unavailable.
"""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

import numpy as np

from .attacks.joint import joint_proofs
from .attacks.joint_problems import level_problems
from .attacks.joint_claims import MIP_NODES, a_dataset
from .problem.coupled import coupled_levels
from .errors import AuditError, InconsistentRelease
from .attacks.exact import ExactOptions, UnitResult, audit_unit, make_engine
from .findings.cells import GridKeeper, grid_cap, grid_json
from .findings.claimstore import FILE as STORE_FILE
from .findings.claimstore import StoreWriter, store_columns
from .findings.document import LISTED, document, listing_cap, store_unit, unit_json
from .findings.model import Findings
from .attacks.implied import LinearProof
from .attacks.engines.histogram import HistogramEngine
from .attacks.unit import plan, unit_cost
from .inputs import Inputs
from .attacks.intervals import without_values
from .attacks.values import audit_values
from .problem.build import Problem
from .release.constraints import UnitRelease
from .release.published_file import read_release, releases_from_frame  # noqa: F401 (audit.published API)
from .specs.schedule import Schedule, load_schedule
from .specs.schema import Schema, load_schema
from .lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)

NOTICE = ("CONFIDENTIAL: this file contains records reconstructed from the published release. "
          "Handle it as the confidential microdata it may reveal.")
UNAVAILABLE = (
    {"what": "baseline probabilities", "reason": "eq. 17 draws rows from the parent geography's confidential rows "
     "(the prior); a published release has none"},
    {"what": "linkage and re-identification", "reason": "matching reconstructed records to persons needs the "
     "confidential records (or an identified file) to match against"},
    {"what": "ranking attack match rates (--rank)", "reason": "RAP-RANK's top-k match rate is scored against the "
     "true rows"},
    {"what": "linear attack accuracy (--linear-secret)", "reason": "needs the microdata's secret column to attack "
     "and to score"},
    {"what": "claims of a unit too large to sample", "reason": "without microdata the candidates come from sampled "
     "datasets; a unit past --max-rows or the time limit has none, so it is undecided as a whole"},
)


# -- problems and the attack -----------------------------------------------------------------------
def published_problems(releases: list[UnitRelease], schema: Schema, schedule: Schedule,
                       max_rows: int | None = None) -> list[Problem]:
    """The units' problems, as from microdata but with no true rows: one per unit of the finest level,
    and one coupled problem per unit of each coarser level (its tables with all its children's).

    With coarser levels each of their units is first solved jointly with its children
    (:func:`audit.attacks.joint.joint_proofs`): a unit proved to have one dataset gets it as its rows
    (:func:`audit.attacks.joint.as_proved`), and a coarser unit of more than ``max_rows`` persons is
    its own tables' problem rather than the row-slot coupled one, as in a microdata run
    (:func:`audit.attacks.joint_problems.level_problems`).
    """
    proofs = joint_proofs(schema, schedule, releases) if coupled_levels(schema, schedule) else {}
    return level_problems(None, schema, schedule, releases, proofs, max_rows)


def determined_dataset(problem: Problem) -> np.ndarray | None:
    """The one dataset the exact counts allow when they have full column rank on the support (most SF1
    blocks), solved without search; None otherwise. :meth:`LinearProof.determines` checks it exactly."""
    linear = LinearProof.of(problem) if problem.n_rows[0] == problem.n_rows[1] else None
    if linear is None:
        return None
    exact = [i for i, (lo, hi) in enumerate(zip(linear.lo, linear.hi)) if lo == hi]
    if not len(linear.rows) or len(exact) < len(linear.rows):
        return None
    h = np.linalg.lstsq(linear.a[exact].astype(float), np.array([linear.lo[i] for i in exact], dtype=float),
                        rcond=None)[0]
    counts = np.round(h).astype(np.int64)
    if (counts < 0).any() or np.abs(h - counts).max() > 1e-6:
        return None
    rows = np.repeat(linear.rows, counts, axis=0)
    return rows if linear.determines(rows) else None


def first_dataset(problem: Problem, options: ExactOptions) -> tuple[np.ndarray | None, object]:
    """One dataset that reproduces the release (None: none does) and the engine that searched, if any.

    Linear algebra first (:func:`determined_dataset`), then the exact engine (raises TimeoutError when
    undecided); an "infeasible" from the IP engine (floating point) is confirmed by the SAT engine
    before the release is called inconsistent.
    """
    rows = determined_dataset(problem) if options.linear else None
    if rows is not None:
        return rows, None
    engine = make_engine(problem, options)
    rows = engine.solve()
    if rows is None and options.engine != "sat":
        engine = make_engine(problem, replace(options, engine="sat"))
        rows = engine.solve()
    return rows, engine


def attack_unit(problem: Problem, options: ExactOptions = ExactOptions()) -> UnitResult:
    """Generate-then-verify on a unit with no true rows: candidates are the claims of a first consistent
    dataset that every enumerated and sampled dataset keeps, verified as in :func:`audit.attacks.exact.audit_unit`.

    A unit that admits no dataset raises :class:`InconsistentRelease` naming the conflicting cells; one
    past ``max_rows`` or whose first dataset runs out of budget is returned undecided as a whole.
    """
    return _attack(problem, options)[0]


def _attack(problem: Problem, options: ExactOptions) -> tuple[UnitResult, np.ndarray | None]:
    """:func:`attack_unit`'s result and the first dataset its candidates came from (None: none found)."""
    start, linear = time.perf_counter(), None
    if problem.proof:  # one dataset, proved from the published values (audit.attacks.joint.as_proved)
        result = audit_unit(problem, options)
        result.problem = replace(problem, truth=None)
        result.seconds = time.perf_counter() - start
        return result, problem.truth
    if problem.n_rows[1] > options.max_rows and problem.joint is not None:  # a coarser unit the joint solve left open
        first, engine = a_dataset(problem.joint, options.seed, options.unit_seconds), None
        if first is None:
            return _undecided(problem, "timeout", f"no dataset of the joint model found within {MIP_NODES:,} MIP nodes"
                              + (f" or --unit-seconds {options.unit_seconds:g}" if options.unit_seconds else ""), start), None
    elif problem.n_rows[1] > options.max_rows:
        no_slots, refused = plan(unit_cost(problem, options), options)
        if refused or not no_slots or not options.linear or not options.histogram:
            return _undecided(problem, "too-large", refused or f"{problem.n_rows[1]} rows > --max-rows {options.max_rows}",
                              start), None
        # count cells only: the first dataset from the histogram model, the attack in cell space (audit_unit)
        linear = LinearProof.of(problem)
        first = HistogramEngine(problem, linear, None).first(options.seed) if linear is not None else None
        if first is None:
            return _undecided(problem, "too-large", f"{no_slots}, and no dataset found in histogram space (atom counts)",
                              start), None
    else:
        try:
            first, engine = first_dataset(problem, options)
        except TimeoutError as err:
            return _undecided(problem, "timeout", f"no consistent dataset found within the budget ({err})", start), None
    if first is None:
        raise InconsistentRelease(f"no dataset reproduces the published values: conflicting cells "
                                  f"{engine.conflicting_cells()}", f"unit {'/'.join(problem.geo)}",
                                  "check those cells' published values against each other and the schema's edits")
    unit = replace(problem, truth=first)  # its wide columns' values are not known: nothing refuted through them
    result = (audit_values(unit, options, None, audit_unit, completes=False) if problem.values
              else audit_unit(unit, options, linear=linear))
    result.problem = problem
    result.intervals = without_values(result.intervals)  # the first dataset's counts, not the truth
    result.seconds = time.perf_counter() - start
    return result, first


def _undecided(problem: Problem, status: str, reason: str, start: float) -> UnitResult:
    return UnitResult(problem, status=status, reason=reason, seconds=time.perf_counter() - start)


def unit_findings(result: UnitResult, release: UnitRelease | None, first: np.ndarray | None = None,
                  header: tuple[str, ...] | None = None, options: ExactOptions = ExactOptions(),
                  cap: int = LISTED) -> dict:
    """The unit's findings (:func:`audit.findings.document.unit_json`); a unit attacked no further than its
    status (too large, timed out) counts as undecided: its claims are not known, so never safe.

    With a store ``header`` its claims are attached for the claim store; the ``first`` dataset the
    candidates came from gives the refuted ones (true in it, contradicted by another consistent dataset).
    """
    if header is not None and first is not None:
        result = replace(result, problem=replace(result.problem, truth=first))  # only the refuted rows read it
    unit = unit_json(result, release, cap, header, options.max_columns)
    if result.status != "done" and not unit["claims"]:
        unit["summary"]["undecided"] = max(unit["summary"]["undecided"], 1)
        unit["claims_unknown"] = True
    return unit


def run_published(release: Path, schema_path: Path, tables_path: Path, options: ExactOptions,
                  on_unit: Callable[[dict], None] | None = None, rules=None, out: Path | None = None) -> Findings:
    """Read the release, attack every unit, and assemble the findings document (no microdata); with
    ``out``, every claim goes to the claim store ``out/claims.csv.gz`` as in a microdata run."""
    start = time.perf_counter()
    schema = load_schema(schema_path)
    schedule = load_schedule(tables_path, schema)
    releases, notes = read_release(release, schema, schedule)
    problems = published_problems(releases, schema, schedule, options.max_rows)
    by_unit = {(r.level, r.geo): r for r in releases}
    keeper = GridKeeper(grid_cap(len(problems)))
    header = store_columns(schema, schedule) if out is not None else None
    writer = StoreWriter(Path(out) / STORE_FILE, header) if header is not None else None
    cap = listing_cap(len(problems))
    units = []
    for problem in problems:
        published = by_unit.get((problem.level, problem.geo))
        result, first = _attack(problem, options)
        units.append(store_unit(unit_findings(result, published, first, header, options, cap), writer))
        if published is not None:
            keeper.offer(units[-1], grid_json(published))
        if on_unit:
            on_unit(units[-1])
    store = writer.close() if writer is not None else None
    doc = document(Inputs(schema, schedule, pd.DataFrame(), str(release)), options, units,
                   time.perf_counter() - start, rules, store)
    finest = max(schedule.levels, key=schema.geography.index)
    return replace(
        doc, notice=NOTICE, inputs={**doc.inputs, "data": None, "release": str(release),
                                    "rows": sum(p.n_rows[1] for p in problems if p.level == finest)},
        published={"release": str(release), "notes": notes,
                   "candidates": f"claims of a first consistent dataset kept by up to {options.solution_cap} "
                                 f"enumerated and {options.samples} sampled datasets (seed {options.seed}), then verified"},
        unavailable=[dict(u) for u in UNAVAILABLE])


def check_options(data: Path | None, schema: Path | None, rank: bool, linear: str | None, infer: bool,
                  scale) -> None:
    """Refuse, before any work, what an attack on a published release alone cannot do."""
    if data is not None:
        raise AuditError("give the microdata (DATA) or a published release (--published), not both", "--published",
                         "drop DATA to audit the release alone, or drop --published")
    if schema is None or infer:
        raise AuditError("a published release needs its schema", "--schema",
                         "pass --schema FILE: there is no data to infer the domains from")
    for flag, given, why in (("--rank", rank, "its match rates are scored against the true rows"),
                             ("--linear-secret", linear, "it needs the microdata's secret column")):
        if given:
            raise AuditError(f"not available with --published: {why}", flag, f"drop {flag}, or audit the microdata")
    if scale is not None:
        raise AuditError("a published release is attacked in this process: --workers, --scheduler, --resume and "
                         "--claims-cap are for microdata", "--published", "drop those options")
