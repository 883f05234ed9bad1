"""``audit check-certificates``: re-check a run's interval certificates without the solvers."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..findings.certfile import FILE, check_certificates
from ..outputs.terminal import echo


def register(app: typer.Typer) -> None:
    @app.command("check-certificates")
    def check(
        folder: Annotated[Path, typer.Argument(help=f"Output folder of audit run (or its {FILE}).")],
    ) -> None:
        """Re-check every exact feasibility-interval end of a run in exact arithmetic, without the solvers:
        each witness dataset reproduces the release and reaches its end, each dual certificate proves
        it. Exit 0 when all hold, 1 naming the ends that fail, 2 on a missing or garbled file."""
        result = check_certificates(folder)
        echo(f"{result.units} units: {result.checked} interval ends re-checked in full, {result.solver} resting on a "
             f"SAT solver's unsat answer (witness re-checked), {len(result.failures)} failing")
        for key, why in result.failures.items():
            echo(f"FAIL {key}: {why}")
        if result.failures:
            raise typer.Exit(1)
