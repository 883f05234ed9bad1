"""``audit linear``: reconstruct a secret column from subset-sum answers, and sweep the mitigations."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..attacks.engines.linear_privacy import DP_HINT, opendp_available
from ..attacks.extras import write_linear
from ..outputs.terminal import echo
from . import DataArg


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
        memory_mb: Annotated[int, typer.Option("--memory-mb", min=1, help="Memory bound (MB): a --method estimated to need more stops (exit 2) before any work; the other method is skipped.")] = 4096,
        out: Annotated[Path, typer.Option("--out", "-o", help="Output folder for linear.json and the SVG plots (created if missing).")] = Path("audit-linear"),
    ) -> None:
        """Linear reconstruction (least squares and LP) of a secret column from subset sums; mitigation sweep."""
        report = write_linear(data, secret, public, out, queries=queries, seed=seed, method=method, sweep=sweep,
                              params=params, trials=trials, mechanism=mechanism, delta=delta, tables=tables,
                              schema=schema, memory_mb=memory_mb)
        echo(f"{secret}: {report['accuracy']:.1%} reconstructed by {method} from {report['n_queries']} exact "
                   f"subset sums (95% CI {report['ci'][0]:.1%}-{report['ci'][1]:.1%}; majority baseline "
                   f"{report['baseline']:.1%})")
        for m, r in report["methods"].items():
            if m != method:
                echo(f"  {m}: skipped ({r['skipped']})" if "skipped" in r else f"  {m}: {r['accuracy']:.1%}")
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
