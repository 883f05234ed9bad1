"""JUnit XML for CI systems: one test suite per rule, one test case per rule per geographic unit."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Mapping


def junit_xml(doc: Mapping) -> str:
    """The checks of a findings document (after :func:`audit.rules.apply`) as a JUnit XML string."""
    checks = list(doc.get("checks") or ())
    titles = {}
    try:
        from .rules import RULES

        titles = {k: v[0] for k, v in RULES.items()}
    except ImportError:  # pragma: no cover
        pass
    root = ET.Element("testsuites", name="disclosure-audit", tests=str(len(checks)),
                      failures=str(sum(c["outcome"] == "fail" for c in checks)),
                      skipped=str(sum(c["outcome"] == "skipped" for c in checks)),
                      time=str((doc.get("seconds") or 0)))
    order = list(dict.fromkeys(c["rule"] for c in checks))
    policy = (doc.get("rules") or {}).get("name", "")
    for rule in order:
        cs = [c for c in checks if c["rule"] == rule]
        suite = ET.SubElement(root, "testsuite", name=f"{rule}: {titles.get(rule, rule)}", tests=str(len(cs)),
                              failures=str(sum(c["outcome"] == "fail" for c in cs)),
                              skipped=str(sum(c["outcome"] == "skipped" for c in cs)), errors="0")
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="policy", value=str(policy))
        for key, value in ((doc.get("rules") or {}).get("rules", {}).get(rule) or {}).items():
            ET.SubElement(props, "property", name=str(key), value=str(value))
        for c in cs:
            case = ET.SubElement(suite, "testcase", classname=f"disclosure.{rule}", name=str(c["unit"]))
            if c["outcome"] == "fail":
                ET.SubElement(case, "failure", message=c["message"], type=rule).text = c["message"]
            elif c["outcome"] == "skipped":
                ET.SubElement(case, "skipped", message=c["message"])
            elif c["outcome"] == "warn":
                ET.SubElement(case, "system-out").text = f"WARNING: {c['message']}"
            else:
                ET.SubElement(case, "system-out").text = c["message"]
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(doc: Mapping, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(junit_xml(doc), encoding="utf-8")
    return path
