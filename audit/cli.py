"""The ``audit`` command line: a thin typer layer over the library.

Every command lives in ``audit/commands/<name>.py`` with a ``register(app)`` function, so features
add commands without editing this file. User mistakes (AuditError) print one line and exit 2; bugs
(InternalError) print one line and exit 3.
"""
from __future__ import annotations

import importlib
import pkgutil
import sys
import warnings
from typing import Annotated, Optional

import typer

from .errors import AuditError, Halted, InternalError, described
from .outputs.terminal import echo
from .signals import exit_code, stops_as_interrupts

try:  # typer >= 0.20 carries its own copy of click
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - older typer on click
    from click import exceptions as click_errors

app = typer.Typer(help="Attack a planned statistical release the way published reconstruction attacks do, "
                       "and report what it proves about individuals.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                  rich_markup_mode=None)  # plain click help: flags without typer's '<bool>' metavar
_state = {"debug": False}


def _version(value: bool) -> None:
    if value:
        from . import __version__

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
    """Run the CLI and return its exit code (0 pass, 1 policy failure, 2 usage or input error, 3 internal error
    (a bug), 130 stopped by Ctrl-C, 143 by SIGTERM).

    A usage or input error prints one line, ``error: WHERE: WHAT -- fix: HOW``, made printable; an internal
    error one line ``internal error: WHAT -- this is a bug ...``.
    """
    args = list(argv if argv is not None else sys.argv[1:])
    _state["debug"] = "--debug" in args
    try:
        with warnings.catch_warnings(), stops_as_interrupts():  # SIGTERM takes Ctrl-C's path
            warnings.showwarning = _warning_line
            code = app(args=args, prog_name="audit", standalone_mode=False)
        if code == 130:  # typer's code for a KeyboardInterrupt (or SIGTERM) that nothing kept anything for
            echo("interrupted: nothing was kept (audit run keeps each finished unit in OUT/parts when started with "
                 "--resume or --workers; audit protect keeps its units once the suppression search has begun)", err=True)
            return exit_code()
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except (AuditError, click_errors.UsageError) as exc:
        if _state["debug"]:
            raise
        error = exc if isinstance(exc, AuditError) else usage_error(exc)
        if error is not None:  # None: a bare 'audit', which has printed the help
            echo(f"error: {error.line()}", err=True)
        return 2
    except Halted as exc:  # Ctrl-C or SIGTERM: what was kept (a scaled run's parts, protect's partial file)
        echo(str(exc), err=True)
        return exit_code()
    except typer.Abort as exc:
        if isinstance(exc.__cause__, EOFError):  # click makes an EOFError (a file cut short) an Abort: not Ctrl-C
            return _internal(exc.__cause__)
        echo("Aborted!", err=True)
        return 1
    except Exception as exc:  # an InternalError or an unexpected failure: a bug; exit 3, never 1 (a policy's fail)
        return _internal(exc)
    return code if isinstance(code, int) else 0


def _internal(exc: BaseException) -> int:
    """A bug: one line and exit 3 (``--debug``: the traceback)."""
    if _state["debug"]:
        raise exc
    if not isinstance(exc, InternalError):
        exc = InternalError(described(exc))
    echo(f"internal error: {exc} (--debug shows the traceback)", err=True)
    return 3


def _warning_line(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings print as one 'warning: ...' line (not Python's file, line and source)."""
    echo(f"warning: {message}", err=True)


def usage_error(exc: Exception) -> AuditError | None:
    """A command-line usage error (an unknown option, a value out of range) as one AuditError line."""
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "audit"
    param = getattr(exc, "param", None)
    opts = [o for o in getattr(param, "opts", None) or () if o.startswith("--")] or getattr(param, "opts", None)
    message = (exc.format_message() if isinstance(exc, click_errors.NoSuchOption) else
               getattr(exc, "message", "") or exc.format_message())
    if param is None or not opts:
        return AuditError(message.rstrip("."), command, f"see '{command} --help'") if message else None
    name = opts[0]
    if isinstance(exc, click_errors.MissingParameter):
        what = "missing" if name.startswith("-") else "missing argument"
        return AuditError(what, name, f"add {name.upper() if not name.startswith('-') else name + ' VALUE'}"
                                      f" (see '{command} --help')")
    low, high = _bounds(param)
    if low is not None or high is not None:
        text = (f"from {low} to {high}" if low is not None and high is not None
                else f"{low} or more" if low is not None else f"{high} or less")
        default = getattr(param, "default", None)
        example = default if isinstance(default, (int, float)) and not isinstance(default, bool) else low
        kind = "a number" if isinstance(example, float) else "an integer"
        return AuditError(f"must be {kind} {text} ({message.rstrip('.')})", name, f"e.g. {name} {example}")
    return AuditError(message.rstrip("."), name, f"see '{command} --help'")


def _bounds(param) -> tuple:
    """The (min, max) of a numeric option, whichever way this typer version keeps them."""
    holder = param if hasattr(param, "min") else getattr(param, "type", None)
    return getattr(holder, "min", None), getattr(holder, "max", None)


def main() -> None:
    sys.exit(run())


def __getattr__(name: str):
    """``click_command``: the CLI as a click command, for the docs' generated reference (docs/hooks.py)."""
    if name == "click_command":
        return typer.main.get_command(app)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
