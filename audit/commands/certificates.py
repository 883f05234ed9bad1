"""``audit check-certificates``: re-check a run's interval certificates without the solvers, against its findings.json."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..findings.certcheck import check_certificates
from ..findings.certfile import FILE
from ..findings.certproofs import drat_trim
from ..outputs.terminal import echo


def register(app: typer.Typer) -> None:
    @app.command("check-certificates")
    def check(
        folder: Annotated[Path, typer.Argument(help=f"Output folder of audit run (or its {FILE}).")],
        findings: Annotated[Optional[Path], typer.Option(
            "--findings", help="The findings.json to hold the certificates against (default: the one beside them).")] = None,
        strict: Annotated[bool, typer.Option(
            "--strict", help="Fail the ends resting on a SAT solver's unsat answer (solver-trusted) too.")] = False,
        proofs: Annotated[bool, typer.Option(
            "--proofs", help="Prove each SAT end again (CaDiCaL, DRUP) and check the proof with drat-trim: "
                             "certified, trusting only the CNF encoding of the release.")] = False,
        drat: Annotated[Optional[Path], typer.Option(
            "--drat-trim", help="The drat-trim program for --proofs (default: the one on PATH).")] = None,
    ) -> None:
        """Re-check every exact feasibility-interval end of a run in exact arithmetic, without the solvers,
        against the findings.json beside it: every end it states exact has a certificate for the same value,
        each witness dataset reproduces the release and reaches its end, each dual certificate proves it,
        and the file is the one sealed with these findings and inputs. Ends resting on a SAT solver's unsat
        are reported solver-trusted, not certified, unless --proofs proves them again and drat-trim checks
        the proofs. Exit 0 when all hold, 1 naming what fails, 2 on a missing or garbled file."""
        result = check_certificates(folder, findings, strict, drat_trim(drat) if proofs or drat else None)
        ends = 2 * result.intervals
        how = (f"{result.checked} re-checked in full, {result.proved} by DRUP proofs drat-trim verified" if proofs or drat
               else "re-checked in full")
        echo(f"{result.units} units, {result.intervals} intervals ({ends} ends): {result.checked + result.proved} "
             f"certified ({how}), {len(result.solver)} solver-trusted (a SAT solver's unsat, not re-checked; witness checked), "
             f"{result.outer} outer bounds (not certified), {len(result.failures)} failing")
        for key, why in result.failures.items():
            echo(f"FAIL {key}: {why}")
        if result.failures:
            raise typer.Exit(1)
        if result.solver:
            echo(f"PASS, not all certified: {len(result.solver)} ends are solver-trusted (--proofs checks them, --strict fails them)")
        else:
            echo("PASS: every exact end certified")
