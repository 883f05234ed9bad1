"""``audit linear``: reconstruct a secret column from subset-sum answers, and sweep the mitigations."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..errors import AuditError
from ..terminal import echo
from . import DataArg, output_folder


def _split(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def _params(text: str | None) -> list[float] | None:
    if not text:
        return None
    try:
        values = [float(t) for t in _split(text)]
    except ValueError:
        raise AuditError(f"--params '{text}' is not a comma-separated list of numbers", "--params",
                         "e.g. --params 1,5,10,20,40") from None
    if not values or any(v < 0 for v in values):
        raise AuditError("--params must be non-negative numbers", "--params", "e.g. --params 1,5,10,20,40")
    return values


def register(app: typer.Typer) -> None:
    @app.command()
    def linear(
        data: DataArg,
        secret: Annotated[str, typer.Option("--secret", help="The column to reconstruct: 0/1 or a small integer.")],
        public: Annotated[str, typer.Option("--public", help="Identifier columns the attacker knows, comma-separated.")],
        queries: Annotated[Optional[int], typer.Option("--queries", "-k", min=1, help="Number of random subset-sum queries (default 2 x rows).")] = None,
        seed: Annotated[int, typer.Option("--seed", min=0, help="Seed for the queries, noise and samples; same seed, same output.")] = 0,
        method: Annotated[str, typer.Option("--method", help="Headline solver: lstsq (least squares) or lp (min max error, HiGHS). Both are reported.")] = "lstsq",
        sweep: Annotated[bool, typer.Option("--sweep", help="Also sweep rounding, noise and subsampling over a grid, with plots.")] = False,
        params: Annotated[Optional[str], typer.Option("--params", help="Sweep grid, comma-separated (default 1, 11, 21, ... up to the row count).")] = None,
        trials: Annotated[int, typer.Option("--trials", min=1, help="Seeded trials per sweep point (fresh queries each).")] = 10,
        mechanism: Annotated[str, typer.Option("--mechanism", help="Noise in the sweep: gaussian, laplace, discrete_gaussian or discrete_laplace.")] = "gaussian",
        delta: Annotated[float, typer.Option("--delta", min=0, max=1, help="Delta for the Gaussian mechanisms' (epsilon, delta).")] = 1e-6,
        tables: Annotated[Optional[Path], typer.Option("--tables", "-t", help="Table schedule YAML: also look for difference attacks between its cells.")] = None,
        schema: Annotated[Optional[Path], typer.Option("--schema", "-s", help="Schema YAML for --tables.")] = None,
        out: Annotated[Path, typer.Option("--out", "-o", help="Output folder for linear.json and the SVG plots (created if missing).")] = Path("audit-linear"),
    ) -> None:
        """Linear reconstruction (least squares and LP) of a secret column from subset sums; mitigation sweep."""
        from ..engines.linear import (MECHANISMS, METHODS, LinearReconstruction, load_frame, mitigation_sweep,
                                      opendp_available, prepare, DP_HINT)

        if method not in METHODS:
            raise AuditError(f"unknown --method '{method}'", "--method", f"use one of {list(METHODS)}")
        if mechanism not in MECHANISMS:
            raise AuditError(f"unknown --mechanism '{mechanism}'", "--mechanism", f"use one of {list(MECHANISMS)}")
        if not 0 < delta < 1:
            raise AuditError(f"--delta must be between 0 and 1, not {delta}", "--delta", "e.g. --delta 1e-6")
        if (tables is None) != (schema is None):
            raise AuditError("--tables and --schema go together", "--tables" if schema is None else "--schema",
                             "pass both to look for difference attacks, or neither")
        output_folder(out)
        frame = load_frame(data)
        target = prepare(frame, secret, _split(public), str(data))
        grid = _params(params)
        runs = {m: LinearReconstruction(target, secret, n_queries=queries, method=m, seed=seed).evaluate()
                for m in METHODS}
        head = runs[method]
        report = {"data": str(data), "secret": secret, "public": list(target.names), "n_rows": target.n,
                  "n_queries": head.n_queries, "seed": seed, "method": method, "accuracy": head.accuracy,
                  "baseline": head.baseline, "ci": list(head.ci), "confidence": head.confidence,
                  "methods": {m: r.to_dict() for m, r in runs.items()}, "sweep": [], "plots": {}}
        out.mkdir(parents=True, exist_ok=True)
        if sweep:
            result = mitigation_sweep(target, secret, params=grid, trials=trials, seed=seed, n_queries=queries,
                                      method=method, mechanism=mechanism, delta=delta, source=str(data))
            meta = result.to_dict()
            report["sweep"] = meta.pop("points")
            report["sweep_settings"] = {**meta, "trials": trials}
            report["privacy"] = result.privacy_note
            for name, svg in result.plots().items():
                (out / f"linear_{name}.svg").write_text(svg)
                report["plots"][name] = f"linear_{name}.svg"
        if tables is not None:
            from ..difference import find_differences
            from ..inputs import load_inputs

            inputs = load_inputs(data, schema, tables)
            report["differences"] = [f.to_dict() for f in find_differences(inputs.frame, inputs.schema, inputs.schedule)]
        (out / "linear.json").write_text(json.dumps(report, indent=2, default=_json_default))
        echo(f"{secret}: {head.accuracy:.1%} reconstructed by {method} from {head.n_queries} exact subset sums "
                   f"(95% CI {head.ci[0]:.1%}-{head.ci[1]:.1%}; majority baseline {head.baseline:.1%})")
        for m, r in runs.items():
            if m != method:
                echo(f"  {m}: {r.accuracy:.1%}")
        if sweep:
            echo(f"  sweep: {len(report['sweep'])} points x {trials} trials; {report['privacy']}")
            for p in report["sweep"]:
                if p["mitigation"] == "noise":
                    eps = p["epsilon"]
                    shown = "unavailable" if eps is None else (eps if isinstance(eps, str) else f"{eps:.3g}")
                    echo(f"    noise {p['param']:g}: accuracy {p['accuracy']:.1%}, RMSE {p['rmse']:.2f}, "
                               f"epsilon {shown}")
            if not opendp_available():
                echo(f"  epsilon unavailable: {DP_HINT}")
        if "differences" in report:
            echo(f"  difference attacks: {len(report['differences'])}")
        echo(f"wrote {out / 'linear.json'}", err=True)


def _json_default(value):
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
