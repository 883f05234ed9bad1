"""``audit check-certificates --proofs``: an interval end resting on a SAT solver's "unsat" proved again,
the proof checked by drat-trim rather than trusted.

The unit's release as the certificates file states it is encoded to CNF (the row-slot encoding of
:mod:`audit.attacks.engines.sat`, with every published cell hard) together with the question the run
asked (the cell past the end); a fresh CaDiCaL solves it and writes a DRUP proof; drat-trim, an
independent checker, must verify that proof. A dataset found instead is checked against the release:
it refutes the end. What stays trusted is the encoding: a verified proof shows that the CNF has no
model, and the CNF stands for the release.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

from pysat.solvers import Solver

from ..attacks.certificates import as_fraction, problem_of
from ..attacks.engines.sat import DEFAULT_SOLVER, SatEngine
from ..errors import AuditError, InternalError
from ..problem.build import Problem

CHECK_SECONDS = 600  # drat-trim's limit per proof


def drat_trim(path: Path | None = None) -> str:
    """The drat-trim program to check proofs with (``path``, else the one on PATH)."""
    found = shutil.which(str(path)) if path is not None else shutil.which("drat-trim")
    if found is None:
        raise AuditError("drat-trim not found" + ("" if path is None else " at that path"), str(path or "PATH"),
                         "install drat-trim (one C file: github.com/marijnheule/drat-trim, `cc -O2 -o drat-trim "
                         "drat-trim.c`) on PATH or give --drat-trim PATH, or check without --proofs")
    return found


class UnitProofs:
    """The SAT ends of one unit (a line of the certificates file), each proved again and checked."""

    def __init__(self, doc: dict, checker: str):
        self.doc, self.checker = doc, checker
        self.problem: Problem = problem_of(doc)
        self.cells = list(self.problem.constraints) + list(self.problem.hidden)
        self.lines = 0  # proof lines checked

    def why_not(self, key: str, side: str) -> str:
        """What is wrong with the end's unsat ("" when a checked proof stands behind it)."""
        entry = self.doc["intervals"][key]
        asked = entry[side]["asked"]
        c = self.cells[int(entry["cell"])]
        wanted = replace(c, lo=as_fraction(asked["lo"]), hi=as_fraction(asked["hi"]), lo_open=bool(asked["lo_open"]),
                         hi_open=bool(asked["hi_open"]))
        # a fresh encoding per end: one engine's later questions reuse auxiliary variables its earlier ones defined
        engine = SatEngine(self.problem, main=False)
        clauses = list(engine._base) + [[s] for s in engine.selectors.values()]
        engine._clauses, guard = [], engine.pool.id()  # the question's clauses alone (no solver: they collect here)
        engine._constraint(wanted, guard)
        clauses += engine._clauses + [[guard]]
        with Solver(name=DEFAULT_SOLVER, bootstrap_with=clauses, with_proof=True) as solver:
            if solver.solve():
                rows = engine.decode(solver.get_model())
                if self.problem.violations(rows):
                    raise InternalError(f"the encoding of {key} gives a dataset that does not reproduce the release")
                return (f"not unsat: a dataset reproduces the release and gives the cell "
                        f"{self.problem.value(rows, c)}, past the end")
            proof = solver.get_proof()
        self.lines += len(proof)
        return _verified(self.checker, clauses, proof)


def _verified(checker: str, clauses: list[list[int]], proof: list[str]) -> str:
    with tempfile.TemporaryDirectory(prefix="audit-drup-") as tmp:
        cnf, drup = Path(tmp) / "f.cnf", Path(tmp) / "f.drup"
        top = max((abs(lit) for clause in clauses for lit in clause), default=0)
        with cnf.open("w") as fh:
            fh.write(f"p cnf {top} {len(clauses)}\n")
            fh.writelines(" ".join(map(str, clause)) + " 0\n" for clause in clauses)
        drup.write_text("".join(line + "\n" for line in proof))
        try:
            done = subprocess.run([checker, str(cnf), str(drup), "-t", str(CHECK_SECONDS)], capture_output=True,
                                  text=True, timeout=CHECK_SECONDS + 60)
        except subprocess.TimeoutExpired:
            return f"drat-trim did not finish in {CHECK_SECONDS} s"
    verdict = [line for line in done.stdout.splitlines() if line.startswith("s ")]
    return "" if verdict == ["s VERIFIED"] else f"drat-trim does not verify the proof ({(verdict or ['no verdict'])[0]})"
