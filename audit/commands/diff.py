"""``audit diff``: what a schedule change adds to the risk, from two findings files."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..findings.claimstore import FILE as STORE_FILE, store_beside
from ..outputs.diff import compare
from ..outputs.diff_risk import worse_lines
from ..findings.files import read_findings
from ..policy.rules import load_rules
from ..outputs.terminal import echo
from . import QuietOpt, named_file, output_file
from .run import JsonOpt


def register(app: typer.Typer) -> None:
    @app.command()
    def diff(
        old: Annotated[Path, typer.Argument(help="findings.json of the current (old) schedule.")],
        new: Annotated[Path, typer.Argument(help="findings.json of the proposed (new) schedule.")],
        rules: Annotated[Optional[str], typer.Option("--rules", "-r", help="Re-evaluate both under this policy (file or built-in name) before comparing.")] = None,
        out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Also write the comparison as JSON to this file.")] = None,
        limit: Annotated[int, typer.Option("--limit", min=0, help="Most newly verified claims to print.")] = 20,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        """Compare two findings: what got worse, claims newly verified, rules newly failing. Exit 1 when anything the rules count got worse."""
        if out is not None:
            output_file(out, inputs={"OLD": old, "NEW": new, "--rules": named_file(rules),
                                     f"{STORE_FILE} beside OLD": old.parent / STORE_FILE,
                                     f"{STORE_FILE} beside NEW": new.parent / STORE_FILE})
        a, b = read_findings(old), read_findings(new)
        if rules is not None:
            policy = load_rules(rules)
            a, b = a.judged(policy), b.judged(policy)
        result = compare(a, b, store_beside(old, a), store_beside(new, b), (old, new))
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(result, indent=1), encoding="utf-8")
        if json_out:
            typer.echo(json.dumps(result, indent=1))
        elif not quiet:
            for line in result["lines"][: limit + 10] + worse_lines(result["worse"], limit):
                echo(line)
            shown = result["new_claims"][:limit]
            for c in shown:
                echo(f"  + {c['unit']}: {c['text']}")
            if len(result["new_claims"]) > len(shown):
                echo(f"  ... and {len(result['new_claims']) - len(shown)} more newly verified claims")
        if result["fails"]:
            raise typer.Exit(1)
