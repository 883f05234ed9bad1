"""``audit report``: re-render the HTML report from a findings.json (optionally under other rules)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..findings.claimstore import FILE as STORE_FILE, store_beside
from ..findings.files import read_findings
from ..findings.junit import write_junit
from ..findings.provenance import select
from ..outputs.report import EXTRAS, extras_beside, write_report
from ..policy.rules import load_rules
from ..outputs.terminal import echo
from . import QuietOpt, named_file, output_file
from .run import RulesOpt

READ_BESIDE = (STORE_FILE, *(f"{name}.json" for name in EXTRAS))  # what the report reads beside the findings


def register(app: typer.Typer) -> None:
    @app.command()
    def report(
        findings: Annotated[Path, typer.Argument(help="findings.json written by audit run or audit gate.")],
        out: Annotated[Optional[Path], typer.Option("--out", "-o", help="HTML file to write (default: report.html beside the findings).")] = None,
        rules: RulesOpt = None,
        junit: Annotated[Optional[Path], typer.Option("--junit", help="Also write JUnit XML here (with --rules: the re-evaluated checks).")] = None,
        quiet: QuietOpt = False,
    ) -> None:
        """Re-render report.html from findings.json; rank/linear/protection.json beside it are included."""
        given = {"FINDINGS": findings, "--rules": named_file(rules),
                 **{f"{name} beside FINDINGS": findings.parent / name for name in READ_BESIDE}}
        out = output_file(out or findings.parent / "report.html", inputs=given)
        if junit is not None:
            output_file(junit, "--junit", inputs={**given, "--out": out})
        doc = read_findings(findings)
        extras, left_out = select(extras_beside(findings.parent), doc.inputs.get("fingerprint"))
        for line in left_out if not quiet else ():
            typer.echo(f"warning: {findings.parent / line}", err=True)
        if rules is not None:
            doc = doc.judged(load_rules(rules), extras.get("rank"), extras.get("linear"))
        path = write_report(doc, out, extras, store_beside(findings, doc))
        if junit is not None:
            write_junit(doc, junit)
        if not quiet:
            echo(f"{(doc.verdict or 'not evaluated').upper()}: report written to {path}"
                       + (f", JUnit to {junit}" if junit else "") + " (confidential)")
