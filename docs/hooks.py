"""MkDocs hook: the command reference generated from the CLI itself (the same help `audit CMD --help` prints),
and the benchmarks page from the records under bench/results (bench/record.py)."""
from __future__ import annotations

import sys
from pathlib import Path

MARKER = "<!-- commands: generated from audit.cli -->"
BENCH_MARKER = "<!-- benchmarks: generated from bench/results -->"
ROOT = Path(__file__).resolve().parents[1]


def _cell(text: str, code: bool = False) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if code else text.replace("<", "&lt;").replace(">", "&gt;")


def command_reference() -> str:
    """Every command of ``audit``: its help, usage and a table of its arguments and options."""
    from audit.cli import click_command as root

    out = []
    for name in sorted(root.commands):
        cmd = root.commands[name]
        ctx = cmd.make_context(name, [], resilient_parsing=True)
        usage = cmd.get_usage(ctx).replace(f"Usage: {name}", f"audit {name}", 1)
        out += [f"## `audit {name}`", "", " ".join((cmd.help or "").split()), "", "```", usage, "```", "",
                "| argument or option | meaning |", "|---|---|"]
        for param in cmd.get_params(ctx):
            record = param.get_help_record(ctx)
            if record:
                out.append(f"| `{_cell(record[0], code=True)}` | {_cell(record[1])} |")
        out.append("")
    return "\n".join(out)


def benchmark_page() -> str:
    """Every record under bench/results, by topic in bench/record.py's order, each table with its date,
    commit, machine, command and options."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import record
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return record.render(record.records())


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 -- MkDocs' hook signature
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, command_reference())
    if BENCH_MARKER in markdown:
        markdown = markdown.replace(BENCH_MARKER, benchmark_page())
    return markdown
