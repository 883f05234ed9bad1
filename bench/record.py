"""Benchmark records: one figure table with the date, commit, machine, command and options it was taken with.

A record is ``bench/results/<topic>/<name>.md``: YAML front matter (``FIELDS``) and a Markdown body, a
table and a sentence or two saying what it shows. Bench scripts write one with ``--record PATH``
(:func:`add_arguments`, :func:`write_from_args`); docs/hooks.py renders every record into
docs/benchmarks.md (:func:`render`). bench/README.md describes the format.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
TOPICS = ("audit", "scale", "state", "protect", "peers", "sizing", "rank", "linear", "replay")
FIELDS = ("title", "topic", "date", "commit", "machine", "command", "options")
HEADINGS = {"audit": "Audit (one unit, the exact attack)", "scale": "Scale (the Bureau's extract)",
            "state": "A state's release", "protect": "Protection", "peers": "Peers' tables",
            "sizing": "Sizing", "rank": "Ranking (RAP-RANK)", "linear": "Linear reconstruction",
            "replay": "The seeds' results replayed"}


class RecordError(ValueError):
    """A record file that does not follow the format: the message names the file and the key or line."""


@dataclass(frozen=True)
class Record:
    """One record: the front matter's fields and the Markdown body (a table and what it shows)."""

    title: str
    topic: str
    date: str
    commit: str
    machine: str
    command: str
    options: str
    body: str
    path: Path | None = field(default=None, compare=False)

    def __post_init__(self):
        where = self.path or "record"
        for key in FIELDS:
            value = getattr(self, key)
            if not isinstance(value, str):
                raise RecordError(f"{where}: '{key}' is a {type(value).__name__}; give it as one line of text")
            if not value.strip():
                raise RecordError(f"{where}: '{key}' is missing or empty; give it in the front matter")
        if self.topic not in TOPICS:
            raise RecordError(f"{where}: topic '{self.topic}' is not one of {', '.join(TOPICS)}")
        if not any(line.lstrip().startswith("|---") or line.lstrip().startswith("| ---")
                   for line in self.body.splitlines()):
            raise RecordError(f"{where}: the body has no Markdown table; a record is a figure table and a sentence")

    def text(self) -> str:
        """The record as a file: front matter, then the body."""
        head = yaml.safe_dump({k: getattr(self, k) for k in FIELDS}, sort_keys=False, allow_unicode=True,
                              width=10**6)
        return f"---\n{head}---\n{self.body.strip()}\n"


def read(path: Path) -> Record:
    """The record in ``path``; :class:`RecordError` names the file and what is wrong."""
    text = Path(path).read_text()
    if not text.startswith("---\n") or "\n---\n" not in text[3:]:
        raise RecordError(f"{path}: no YAML front matter; start the file with '---', the fields, then '---'")
    head, body = text[4:].split("\n---\n", 1)
    try:
        meta = yaml.load(head, Loader=yaml.BaseLoader)  # every value a string: commit 0123456 stays as written
    except yaml.YAMLError as exc:
        raise RecordError(f"{path}: the front matter is not YAML ({' '.join(str(exc).split())})") from None
    if not isinstance(meta, dict):
        raise RecordError(f"{path}: the front matter is not a mapping of {', '.join(FIELDS)}")
    unknown = sorted(set(meta) - set(FIELDS))
    if unknown:
        raise RecordError(f"{path}: unknown front-matter key(s) {', '.join(unknown)}; the keys are {', '.join(FIELDS)}")
    return Record(**{k: meta.get(k, "") for k in FIELDS}, body=body.strip(), path=Path(path))


def records(root: Path = RESULTS) -> list[Record]:
    """Every record under ``root`` (``<topic>/<name>.md``), in the topics' order, the newest first within a
    topic (the first YYYY-MM-DD of ``date``), then by file name; a record's topic must be its folder's
    name. Other files (raw outputs a record links to) are skipped."""
    found = []
    for path in sorted(Path(root).glob("*/*.md")):
        rec = read(path)
        if rec.topic != path.parent.name:
            raise RecordError(f"{path}: topic '{rec.topic}' but the file is in '{path.parent.name}/'; "
                              f"move it to {rec.topic}/ or fix the topic")
        found.append(rec)
    found.sort(key=lambda r: r.path.name)
    found.sort(key=lambda r: _day(r.date), reverse=True)
    return sorted(found, key=lambda r: TOPICS.index(r.topic))


def _day(date: str) -> str:
    found = re.search(r"\d{4}-\d{2}-\d{2}", date)
    return found.group() if found else ""


def _rel(path: Path) -> str:
    try:
        return Path(path).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return Path(path).as_posix()


def render(found: list[Record], heading_level: int = 2) -> str:
    """The records as Markdown, one section per topic (``TOPICS``' order), each table under its title with
    the date, commit, machine, command and options beside it."""
    out, topic = [], None
    h = "#" * heading_level
    for rec in found:
        if rec.topic != topic:
            topic = rec.topic
            out += [f"{h} {HEADINGS[topic]}", ""]
        out += [f"{h}# {rec.title}", "",
                f"**Date** {_line(rec.date)} · **commit** {_hashes(_line(rec.commit))} · "
                f"**machine** {_line(rec.machine)}  ",  # two spaces: a line break
                f"**Command** {_code(rec.command)} · **options** {_line(rec.options)}", "", rec.body, ""]
        if rec.path is not None:
            out += [f"<small>Record: `{_rel(rec.path)}`</small>", ""]
    return "\n".join(out)


def _line(text: str) -> str:
    """One line of text (a YAML value may wrap)."""
    return " ".join(text.split())


def _code(text: str) -> str:
    """A command in code font, or as written where it marks its own code (a description of what ran)."""
    return _line(text) if "`" in text else f"`{_line(text)}`"


def _hashes(text: str) -> str:
    """Commit hashes in code font (the rest of the text as written)."""
    return re.sub(r"(?<![`\w])([0-9a-f]{7,40})(?![`\w])", r"`\1`", text)


# ------------------------------------------------------------------ writing a record from a bench script

def commit() -> str:
    """``git rev-parse --short HEAD``, with ``+ uncommitted changes`` when tracked files differ from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        # records written by this run (or an earlier one of the same batch) are not changes to what was measured
        changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)bench/results")
        return head + (" + uncommitted changes" if changed else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"


def machine() -> str:
    """CPU cores, load average (1 and 15 minutes) and memory of this machine, now."""
    one, _, fifteen = os.getloadavg()
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores (load {one:.1f}, 15-min {fifteen:.1f}), {mem:.0f} GiB"


def command(argv: list[str] | None = None) -> str:
    """The command line that ran, the script's path relative to the checkout."""
    argv = list(sys.argv if argv is None else argv)
    if argv:
        argv[0] = _rel(Path(argv[0]))
    return shlex.join(["python", *argv])


def options(parser, args, skip: tuple[str, ...] = ("record", "note", "out")) -> str:
    """The options given that differ from the parser's defaults, as ``--name value``; ``defaults`` if none
    (positional arguments are in the command)."""
    given = []
    for action in parser._actions:
        key = action.dest
        if not action.option_strings or key in skip or key == "help" or not hasattr(args, key):
            continue
        value = getattr(args, key)
        if value == action.default:
            continue
        flag = action.option_strings[-1]
        if value is True or value is False:
            given.append(flag)
        else:
            given.append(f"{flag} {' '.join(map(str, value)) if isinstance(value, (list, tuple)) else value}")
    return ", ".join(given) or "defaults"


def table(header: list[str], rows: list[list]) -> str:
    """A Markdown table; ``|`` in a value is escaped."""
    def line(values) -> str:
        return "| " + " | ".join(str(v).replace("|", "\\|") for v in values) + " |"

    return "\n".join([line(header), "|" + "---|" * len(header), *(line(r) for r in rows)])


def write(path: Path, title: str, topic: str, header: list[str], rows: list[list], note: str,
          options_: str = "defaults", command_: str | None = None, machine_: str | None = None) -> Record:
    """Write a record of this run to ``path`` (replacing one there): today's date (UTC), this checkout's
    commit, this machine now, this command line."""
    rec = Record(title=title, topic=topic, date=datetime.now(timezone.utc).strftime("%Y-%m-%d"), commit=commit(),
                 machine=machine_ or machine(), command=command_ or command(), options=options_,
                 body=f"{table(header, rows)}\n\n{note.strip()}", path=Path(path))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(rec.text())
    return rec


def add_arguments(parser) -> None:
    """``--record PATH`` and ``--note TEXT`` on a bench script's parser."""
    parser.add_argument("--record", metavar="PATH",
                        help="also write the figures as a record (bench/results/<topic>/<name>.md; "
                             "see bench/README.md)")
    parser.add_argument("--note", help="with --record: the sentence saying what the figures show "
                                       "(default: a plain summary of the run)")


def write_from_args(parser, args, title: str, topic: str, header: list[str], rows: list[list],
                    summary: str) -> Record | None:
    """Write the record ``--record`` asks for (``--note`` or ``summary`` as its sentence); None if not asked."""
    if not getattr(args, "record", None):
        return None
    rec = write(Path(args.record), title, topic, header, rows, args.note or summary, options(parser, args))
    print(f"record written: {args.record}", file=sys.stderr)
    return rec
