"""The documentation's examples run (issue 36): every `audit` command in the README's and the tutorials' bash
blocks, in order, from a folder holding the samples, exits as the page says (0, or 1 where it shows a FAIL), and
the docs site's command reference is generated from the CLI itself."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "tutorials").glob("*.md"))]


def _commands() -> list[tuple[str, str]]:
    """(page, command) for each `audit ...` line of a bash block, first occurrence only."""
    seen, out = set(), []
    for page in PAGES:
        for block in re.findall(r"```bash\n(.*?)```", page.read_text(), re.S):
            for line in block.splitlines():
                line = line.split("#")[0].strip()
                if line.startswith("audit ") and line not in seen:
                    seen.add(line)
                    out.append((page.relative_to(ROOT).as_posix(), line))
    return out


COMMANDS = _commands()


def test_the_pages_have_examples():
    assert {p for p, _ in COMMANDS} >= {"README.md", "docs/tutorials/first-audit.md", "docs/tutorials/ci-gate.md"}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("docs")
    (work / "samples").symlink_to(ROOT / "samples")
    return work


@pytest.mark.parametrize("page,command", COMMANDS, ids=[c for _, c in COMMANDS])
def test_documented_command_runs(page, command, workdir):
    args = command.split()[1:]
    done = subprocess.run([sys.executable, "-m", "audit", *args], cwd=workdir, capture_output=True, text=True,
                          timeout=600)
    text = (ROOT / page).read_text()
    shown = text[text.index(command):].split("```", 3)  # the command's block, then the output block after it
    expects_fail = len(shown) > 2 and re.search(r"^(FAIL|Verdict: FAIL)", shown[2], re.M) is not None
    assert done.returncode == (1 if expects_fail else 0), f"{page}: {command}\n{done.stderr[-2000:]}"
    assert "error" not in done.stderr.lower().split("\n")[-1]


def test_command_reference_is_generated_from_the_cli():
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        from hooks import MARKER, command_reference
    finally:
        sys.path.pop(0)
    assert MARKER in (ROOT / "docs" / "reference" / "commands.md").read_text()
    reference = command_reference()
    from audit.cli import click_command

    for name in click_command.commands:
        assert f"## `audit {name}`" in reference
    assert "`--max-columns <int range>`" in reference and "`-t, --tables <path>`" in reference


def _first_pixel(png: bytes) -> tuple[int, int, int]:
    """The top-left pixel's RGB (under any PNG row filter the first row's first pixel is stored raw)."""
    import zlib

    data, pos = b"", 8
    while pos < len(png):
        size, kind = int.from_bytes(png[pos:pos + 4], "big"), png[pos + 4:pos + 8]
        data += png[pos + 8:pos + 8 + size] if kind == b"IDAT" else b""
        pos += 12 + size
    return tuple(zlib.decompress(data)[1:4])


def test_screenshot_shows_only_the_asked_sections(tmp_path):
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("needs Debian chromium at /usr/bin/chromium (apt-get install -y chromium)")
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        from screenshot import screenshot
    finally:
        sys.path.pop(0)
    report = tmp_path / "report.html"
    html = ('<html><head></head><body style="margin:0"><main><section id="summary" style="height:2000px;background:#000"></section>'
            '<section id="tables"><table><tr><td>7</td></tr></table></section></main></body></html>')
    report.write_text(html)
    out = screenshot(report, tmp_path / "grid.png", ["tables"], 200, 100)
    png = out.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == 200
    assert sum(_first_pixel(png)) > 600, "the black section above the table was not hidden"
    assert report.read_text() == html and sorted(p.name for p in tmp_path.iterdir()) == ["grid.png", "report.html"]
    with pytest.raises(SystemExit, match="no section with id nowhere"):
        screenshot(report, tmp_path / "x.png", ["nowhere"])
