"""``audit demo``: the whole pipeline on the bundled samples (shipped in the wheel); opens nothing."""
from __future__ import annotations

import importlib.resources
import json
import shutil
from pathlib import Path
from typing import Annotated

import typer

from ..attacks.engines._explain import EXPLAIN_BUDGET
from ..errors import AuditError
from ..pipeline import run_audit
from ..outputs.terminal import echo
from . import QuietOpt, output_folder
from .run import ExplainBudgetOpt, ExplainSecondsOpt, JsonOpt, audit_options, budget_of, warn_left_out

SAMPLES = ("block7", "households")


def register(app: typer.Typer) -> None:
    @app.command()
    def demo(
        out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the sample inputs and each sample's outputs.")] = Path("audit-demo"),
        explain_budget: ExplainBudgetOpt = EXPLAIN_BUDGET,
        explain_seconds: ExplainSecondsOpt = None,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        """Run the audit on the bundled samples (a 7-person block, three household blocks) and print where the reports are."""
        output_folder(out)
        budget = budget_of(explain_budget, explain_seconds)
        results = {}
        root = importlib.resources.files("audit.samples_data")
        for name in SAMPLES:
            folder = out / name
            inputs = folder / "inputs"
            inputs.mkdir(parents=True, exist_ok=True)
            for file in ("data.csv", "schema.yaml", "tables.yaml"):
                with importlib.resources.as_file(root / name / file) as src:
                    shutil.copyfile(src, inputs / file)
            try:
                doc = run_audit(inputs / "data.csv", inputs / "schema.yaml", inputs / "tables.yaml", folder,
                                audit_options(folder, inputs / "data.csv", inputs / "schema.yaml", inputs / "tables.yaml",
                                              explain_budget=budget, use_existing=False),
                                progress=not (quiet or json_out))
            except (AuditError, ImportError) as exc:  # e.g. an engine this installation lacks
                results[name] = {"error": f"{exc.__class__.__name__}: {exc}"}
                if not (quiet or json_out):
                    echo(f"{name}: could not run ({exc})", err=True)
                continue
            if not (quiet or json_out):
                warn_left_out(doc, folder)
            results[name] = {"verdict": doc.verdict, "failing": [f.rule for f in doc.failing], **doc.outputs}
            if not (quiet or json_out):
                echo(f"{name}: {doc.verdict.upper()}"
                           + (f" (failing: {', '.join(results[name]['failing'])})" if doc.failing else ""))
                echo(f"  report: {doc.outputs['report']}")
        if json_out:
            typer.echo(json.dumps(results, indent=1))
        if not any("verdict" in r for r in results.values()):
            raise AuditError("no sample could be run", "audit demo", fix="see the messages above")
