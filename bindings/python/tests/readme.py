"""The README's per-language handler examples, as files: each section of ``## Handlers in other
languages`` shows its files as fenced blocks, each right after a line naming the file
(`` `my-tasks/order_total.yaml` (…): ``). The tests write them into a directory and run them as a
new user would."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO

_FILE_LINE = re.compile(r"^`([\w./-]+)`")


def section(heading: str) -> str:
    """The README's text under ``heading`` (a ``###`` line), up to the next heading of its level or above."""
    text = (REPO / "README.md").read_text()
    start = text.index(heading + "\n")
    rest = text[start + len(heading) + 1:]
    end = re.search(r"^#{2,3} ", rest, re.MULTILINE)
    return rest[: end.start()] if end else rest


def files(heading: str) -> dict[str, str]:
    """The files the section shows: path → content (the fenced block after the line naming it)."""
    lines = section(heading).splitlines()
    shown: dict[str, str] = {}
    index = 0
    while index < len(lines):
        named = _FILE_LINE.match(lines[index])
        if named and index + 1 < len(lines) and lines[index + 1].startswith("```"):
            end = lines.index("```", index + 2)
            shown[named.group(1)] = "\n".join(lines[index + 2:end]) + "\n"
            index = end
        index += 1
    return shown


def write(heading: str, directory: Path) -> dict[str, Path]:
    """Writes the section's files under ``directory``; answers their paths."""
    written = {}
    for name, content in files(heading).items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        written[name] = path
    return written
