"""Start-up cost: what the command line and a worker process import, the compiled report template kept."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "pyarrow", "torch", "dask", "jinja2", "highspy", "scipy", "opendp", "gurobipy", "pydantic")


def _loaded(module: str) -> set[str]:
    """The heavy libraries a fresh interpreter holds after importing ``module``."""
    code = f"import sys, {module}; print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=True)
    return set(out.stdout.split()) & set(HEAVY)


@pytest.mark.parametrize("module", ["audit.cli", "audit.scale.worker"])
def test_the_cli_and_a_worker_import_no_heavy_library(module):
    """`audit --help` and every command's start, and each worker process of a run, load pandas (0.45 s of
    CPU with pyarrow), jinja2, HiGHS and the optional extras only where they are used."""
    assert _loaded(module) == set()


def test_the_report_template_is_compiled_once_and_kept(tmp_path, monkeypatch):
    """Compiling the report template took 0.12 s of CPU in every run: it is kept in the user's cache folder
    and loaded from there, not compiled, the next time."""
    import jinja2

    from audit.outputs.report import _environment

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    first = _environment().get_template("report.html.j2")
    assert len(list((tmp_path / "cache" / "disclosure-audit" / "templates").iterdir())) == 1

    def compile_again(*args, **kwargs):
        raise AssertionError("compiled again")

    monkeypatch.setattr(jinja2.Environment, "compile", compile_again)
    assert _environment().get_template("report.html.j2").blocks.keys() == first.blocks.keys()


def test_the_report_template_loads_where_no_cache_folder_can_be_made(tmp_path, monkeypatch):
    """A cache folder that cannot be made (here under a plain file) only means compiling the template again."""
    from audit.outputs.report import _environment

    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file" / "cache"))
    env = _environment()
    assert env.bytecode_cache is None and env.get_template("report.html.j2").name == "report.html.j2"
