"""``audit demo``: the whole pipeline on the bundled samples (shipped in the wheel); opens nothing."""
from __future__ import annotations

import importlib.resources
import shutil
from pathlib import Path
from typing import Annotated

import typer

from ..terminal import echo
from . import QuietOpt, output_folder
from .run import JsonOpt

SAMPLES = ("block7", "households")


def register(app: typer.Typer) -> None:
    @app.command()
    def demo(
        out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the sample inputs and each sample's outputs.")] = Path("audit-demo"),
        explain_seconds: Annotated[float, typer.Option("--explain-seconds", min=0, help="Time budget per unit for explanations.")] = 2.0,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        """Run the audit on the bundled samples (a 7-person block, three household blocks) and print where the reports are."""
        import json

        from ..errors import AuditError
        from .run import pipeline

        output_folder(out)
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
                doc = pipeline(inputs / "data.csv", inputs / "tables.yaml", inputs / "schema.yaml", folder,
                               explain_seconds=explain_seconds, quiet=quiet or json_out, use_existing=False)
            except (AuditError, ImportError) as exc:  # e.g. an engine this installation lacks
                results[name] = {"error": f"{exc.__class__.__name__}: {exc}"}
                if not (quiet or json_out):
                    echo(f"{name}: could not run ({exc})", err=True)
                continue
            results[name] = {"verdict": doc["verdict"], "failing": [f["rule"] for f in doc["failing"]],
                             **doc["outputs"]}
            if not (quiet or json_out):
                echo(f"{name}: {doc['verdict'].upper()}"
                           + (f" (failing: {', '.join(results[name]['failing'])})" if doc["failing"] else ""))
                echo(f"  report: {doc['outputs']['report']}")
        if json_out:
            typer.echo(json.dumps(results, indent=1))
        if not any("verdict" in r for r in results.values()):
            raise AuditError("no sample could be run", "audit demo", fix="see the messages above")
