"""A picture of some sections of an HTML report, for the docs (headless Chromium, /usr/bin/chromium).

    python docs/screenshot.py OUT/report.html docs/images/NAME.png [--sections tables intervals]
                              [--width 1280] [--height 1000]

Writes a copy of the report beside it with every other section of ``<main>`` hidden (a headless
screenshot scrolled to a section comes out blank), takes the top ``width`` x ``height`` pixels, and
removes the copy. The report itself is never changed.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def screenshot(report: Path, out: Path, sections: list[str], width: int = 1280, height: int = 1000) -> Path:
    """``out``, a PNG of ``report`` showing only the ``<main>`` sections of those ids (all where empty)."""
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"error: {CHROMIUM} not found; install it (apt-get install -y chromium)")
    html = Path(report).read_text()
    if "</head>" not in html:
        raise SystemExit(f"error: {report}: no </head>; give the report.html that `audit report` wrote")
    missing = [s for s in sections if f'id="{s}"' not in html]
    if missing:
        raise SystemExit(f"error: {report}: no section with id {', '.join(missing)}; see the report's contents line")
    keep = "".join(f":not(#{s})" for s in sections)
    style = f"<style>main > *{keep} {{display: none}}</style>" if sections else ""
    with tempfile.TemporaryDirectory(prefix="audit-shot-") as tmp:
        copy = Path(report).with_name(f".screenshot-{Path(report).name}")  # beside it: relative links still resolve
        try:
            copy.write_text(html.replace("</head>", style + "</head>", 1))
            done = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp}", f"--window-size={width},{height}",
                                   f"--screenshot={Path(out).resolve()}", copy.resolve().as_uri()],
                                  capture_output=True, text=True, timeout=120)
        finally:
            copy.unlink(missing_ok=True)
    if done.returncode != 0 or not Path(out).exists():
        raise SystemExit(f"error: chromium failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
    return Path(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--sections", nargs="*", default=["tables"], help="ids of the report's sections to show")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=1000)
    args = ap.parse_args(argv)
    print(screenshot(args.report, args.out, args.sections, args.width, args.height))
    return 0


if __name__ == "__main__":
    sys.exit(main())
