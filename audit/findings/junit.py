"""JUnit XML for CI systems: one test suite per rule, with one test case for the rule over all units
(failing when a unit fails, naming every failing unit) and one per failing or warned unit up to
:data:`UNIT_CASES`."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Mapping

from ..policy.rules import RELEASE, RULES

UNIT_CASES = 100  # failing units with a test case of their own, per rule; the rule's case names them all
ALL_UNITS = "(all units)"


class _Suite:
    """One rule's checks, seen one at a time."""

    def __init__(self):
        self.outcomes: dict[str, int] = {}
        self.cases: list[dict] = []
        self.failing: list[str] = []
        self.release: dict | None = None

    def add(self, check: dict) -> None:
        outcome = check["outcome"]
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        if check["unit"] == RELEASE:
            self.release = check
        elif outcome in ("fail", "warn"):
            if outcome == "fail":
                self.failing.append(str(check["unit"]))
            if len(self.cases) < UNIT_CASES:
                self.cases.append(check)


def _case(suite: ET.Element, rule: str, name: str, outcome: str, message: str, detail: str | None = None) -> None:
    case = ET.SubElement(suite, "testcase", classname=f"disclosure.{rule}", name=name)
    if outcome == "fail":
        ET.SubElement(case, "failure", message=message, type=rule).text = detail or message
    elif outcome == "skipped":
        ET.SubElement(case, "skipped", message=message)
    else:
        ET.SubElement(case, "system-out").text = ("WARNING: " if outcome == "warn" else "") + message


def _rule_case(suite: ET.Element, rule: str, s: _Suite) -> None:
    """The rule over every unit: fails when a unit fails, and names every failing unit."""
    units = sum(s.outcomes.values())
    failed, warned, skipped = (s.outcomes.get(k, 0) for k in ("fail", "warn", "skipped"))
    if failed:
        _case(suite, rule, ALL_UNITS, "fail", f"{failed} of {units} units fail",
              "failing units:\n" + "\n".join(s.failing))
    elif warned:
        _case(suite, rule, ALL_UNITS, "warn", f"{warned} of {units} units warned")
    elif skipped == units:
        _case(suite, rule, ALL_UNITS, "skipped", f"skipped in all {units} units")
    else:
        _case(suite, rule, ALL_UNITS, "pass", f"{units - skipped} units pass" + (f", {skipped} skipped" if skipped else ""))


def junit_xml(doc: Mapping) -> str:
    """The checks of a findings document (after :func:`audit.policy.rules.apply`) as a JUnit XML string."""
    titles = {k: v[0] for k, v in RULES.items()}
    suites: dict[str, _Suite] = {}
    for c in doc.get("checks") or ():
        suites.setdefault(c["rule"], _Suite()).add(c)
    root = ET.Element("testsuites", name="disclosure-audit", time=str(doc.get("seconds") or 0))
    policy = (doc.get("rules") or {}).get("name", "")
    tests = failures = skipped = 0
    for rule, s in suites.items():
        suite = ET.SubElement(root, "testsuite", name=f"{rule}: {titles.get(rule, rule)}", errors="0")
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="policy", value=str(policy))
        for key, value in ((doc.get("rules") or {}).get("rules", {}).get(rule) or {}).items():
            ET.SubElement(props, "property", name=str(key), value=str(value))
        if s.release is not None:
            _case(suite, rule, s.release["unit"], s.release["outcome"], s.release["message"])
        else:
            _rule_case(suite, rule, s)
            for c in s.cases:
                _case(suite, rule, str(c["unit"]), c["outcome"], c["message"])
        cases = suite.findall("testcase")
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(sum(c.find("failure") is not None for c in cases)))
        suite.set("skipped", str(sum(c.find("skipped") is not None for c in cases)))
        tests += len(cases)
        failures += int(suite.get("failures"))
        skipped += int(suite.get("skipped"))
    root.set("tests", str(tests))
    root.set("failures", str(failures))
    root.set("skipped", str(skipped))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(doc: Mapping, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(junit_xml(doc), encoding="utf-8")
    return path
