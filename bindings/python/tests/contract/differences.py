"""Comparing two workers' facts, and the README's list of deliberate differences that the
comparison may find (and must find: a listed difference that no longer occurs is an error too)."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path

from contract.shape import Facts

SECTION = "## Deliberate differences from the upstream worker"
KINDS = ("ours only", "upstream only", "differs")


@dataclass(frozen=True)
class Difference:
    """One fact of one request that is not the same on both workers."""
    request: str
    fact: str
    kind: str
    ours: str | None
    upstream: str | None

    def __str__(self) -> str:
        return f"`{self.request}` `{self.fact}` {self.kind}: ours={self.ours!r} upstream={self.upstream!r}"


@dataclass(frozen=True)
class Deliberate:
    """A row of the README's table: patterns (fnmatch) for the request and the fact, the kind, the reason."""
    request: str
    fact: str
    kind: str
    reason: str

    def covers(self, difference: Difference) -> bool:
        return (self.kind == difference.kind and _matches(difference.request, self.request)
                and _matches(difference.fact, self.fact))

    def __str__(self) -> str:
        return f"`{self.request}` `{self.fact}` {self.kind}"


def compare(ours: dict[str, Facts], upstream: dict[str, Facts]) -> list[Difference]:
    """Every fact of every request that differs between the two workers."""
    found: list[Difference] = []
    for request in sorted(set(ours) | set(upstream)):
        mine, theirs = ours.get(request, {}), upstream.get(request, {})
        for fact in sorted(set(mine) | set(theirs)):
            a, b = mine.get(fact), theirs.get(fact)
            if a == b:
                continue
            kind = "ours only" if b is None else "upstream only" if a is None else "differs"
            found.append(Difference(request, fact, kind, a, b))
    return found


def _expand(pattern: str) -> list[str]:
    """``a{b,c}d`` → ``abd``, ``acd`` (groups do not nest)."""
    match = re.search(r"\{([^{}]*)\}", pattern)
    if not match:
        return [pattern]
    head, tail = pattern[:match.start()], pattern[match.end():]
    return [expanded for choice in match.group(1).split(",") for expanded in _expand(head + choice + tail)]


def _matches(name: str, pattern: str) -> bool:
    """fnmatch, where ``{a,b}`` means either ``a`` or ``b``."""
    return any(fnmatch.fnmatchcase(name, p) for p in _expand(pattern))


_ROW = re.compile(r"^\|\s*`([^`]+)`\s*`([^`]+)`\s*\|\s*([^|]+?)\s*\|\s*(.+?)\s*\|\s*$")


def deliberate_differences(readme: Path) -> list[Deliberate]:
    """The table of README's section ``SECTION``: first column `` `request` `fact` ``, then the kind
    (one of ``KINDS``), then the reason. Malformed rows are errors, not skipped."""
    text = readme.read_text()
    start = text.find(SECTION)
    if start < 0:
        raise AssertionError(f"{readme} has no section {SECTION!r}")
    body = text[start + len(SECTION):]
    end = body.find("\n## ")
    rows: list[Deliberate] = []
    for line in (body if end < 0 else body[:end]).splitlines():
        if not line.startswith("|") or set(line) <= set("|-: ") or line.lower().startswith("| difference"):
            continue
        match = _ROW.match(line)
        if not match:
            raise AssertionError(f"{readme}: row not of the form | `request` `fact` | kind | reason |: {line}")
        request, fact, kind, reason = match.groups()
        if kind not in KINDS:
            raise AssertionError(f"{readme}: kind {kind!r} is none of {KINDS}: {line}")
        rows.append(Deliberate(request, fact, kind, reason))
    if not rows:
        raise AssertionError(f"{readme}: the section {SECTION!r} has no table rows")
    return rows
