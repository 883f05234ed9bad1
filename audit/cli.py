"""The ``audit`` command line: a thin typer layer over the library.

Every command lives in ``audit/commands/<name>.py`` with a ``register(app)`` function, so features
add commands without editing this file. User mistakes (AuditError) print one line and exit 2.
"""
from __future__ import annotations

import importlib
import pkgutil
import sys
from typing import Annotated, Optional

import typer

from . import __version__
from .errors import AuditError

app = typer.Typer(help="Attack a planned statistical release the way published reconstruction attacks do, "
                       "and report what it proves about individuals.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
_state = {"debug": False}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"disclosure-audit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[Optional[bool], typer.Option("--version", callback=_version, is_eager=True,
                                                    help="Print the version and exit.")] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show the full traceback of any error.")] = False,
) -> None:
    _state["debug"] = debug


def _register_commands() -> None:
    from . import commands

    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        importlib.import_module(f"{commands.__name__}.{info.name}").register(app)


_register_commands()


def run(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code (0 pass, 1 policy failure, 2 usage or input error)."""
    _state["debug"] = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        app(args=argv, prog_name="audit", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except AuditError as exc:
        if _state["debug"]:
            raise
        typer.echo(f"error: {exc.line()}", err=True)
        return 2
    return 0


def main() -> None:
    sys.exit(run())
