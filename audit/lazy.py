"""Modules imported on first use, for the modules a worker process loads but seldom needs whole."""
from __future__ import annotations

import importlib
from types import ModuleType


class LazyModule:
    """``pd = LazyModule("pandas")``: the module is imported when one of its attributes is first read.

    A worker process imports the attack's modules to run a unit, which never touches a data frame: pandas
    (0.45 s of CPU with pyarrow) would be a third of its start-up. Each attribute, once read, is kept.
    """

    def __init__(self, name: str):
        self._lazy_name = name

    def __getattr__(self, attr: str):
        if attr.startswith("__"):  # copy, pickle and the import machinery probe these: no import for them
            raise AttributeError(attr)
        value = getattr(self.module, attr)
        setattr(self, attr, value)
        return value

    @property
    def module(self) -> ModuleType:
        return importlib.import_module(self._lazy_name)

    def __repr__(self) -> str:
        return f"<module {self._lazy_name!r}, imported on first use>"
