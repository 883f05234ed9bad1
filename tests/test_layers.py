"""The folders of audit/ are pipeline stages; imports point from later stages to earlier ones only."""
import re
from pathlib import Path

import audit

ORDER = ["lazy", "errors", "paths", "signals", "specs", "data", "release", "problem", "inputs", "attacks", "policy", "findings",
         "outputs", "peers", "protection", "scale", "published", "pipeline", "imports", "cli", "commands", "__main__"]
# Known exceptions, each a reason to split a module further (issue 15): ExactAttack wraps the per-unit
# run in findings/document.py; the ranking and linear attacks draw their own plots.
ALLOWED = {("attacks", "findings"), ("attacks", "outputs")}
ROOT = Path(audit.__file__).parent


def _stage(module: list[str]) -> str:
    return module[1] if len(module) > 1 else module[0]


def _imports():
    for path in ROOT.rglob("*.py"):
        parts = ["audit", *path.relative_to(ROOT).with_suffix("").parts]
        package = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
        for m in re.finditer(r"^\s*from (\.+)([\w.]*) import", path.read_text(), re.M):
            base = package[: len(package) - (len(m.group(1)) - 1)]
            target = base + (m.group(2).split(".") if m.group(2) else [])
            yield parts, target


def test_every_module_is_in_a_stage():
    stages = {_stage(p) for p, _ in _imports() if len(p) > 1 and p[1] not in ("samples_data",)}
    assert stages - {"__init__"} <= set(ORDER)


def test_imports_point_to_earlier_stages():
    wrong = []
    for module, target in _imports():
        a, b = _stage(module), _stage(target)
        if a in ORDER and b in ORDER and ORDER.index(b) > ORDER.index(a) and (a, b) not in ALLOWED:
            wrong.append(f"{'.'.join(module)} imports {'.'.join(target)}")
    assert wrong == []
