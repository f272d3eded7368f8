"""Answers reduced to facts that two implementations must share: the JSON type at every key path,
string formats instead of volatile values (uuids, `worker-<uuid>` ids, RFC 3339 timestamps), and the
values of enumeration-like strings."""

from __future__ import annotations

import re
from typing import Any

#: One observation: fact name → value (``"$.status"`` → ``"string=healthy"``).
Facts = dict[str, str]

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_FORMATS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("uuid", re.compile(rf"^{_UUID}$")),
    ("worker-uuid", re.compile(rf"^worker-{_UUID}$")),
    ("worker_uuid", re.compile(rf"^worker_{_UUID}$")),
    ("rfc3339-Z", re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")),
    ("rfc3339-offset", re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?[+-]\d{2}:\d{2}$")),
    ("duration", re.compile(r"^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h|d)\s*)+$")),
    ("semver", re.compile(r"^\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$")),
)
#: Strings compared by value: short lowercase words (states, codes, kinds), not free text.
_ENUM_LIKE = re.compile(r"^[a-z][a-z0-9_.:/-]{0,63}$")


def string_fact(value: str) -> str:
    """``string:<format>`` for a volatile string, ``string=<value>`` for an enumeration-like one,
    ``string`` for free text."""
    for name, pattern in _FORMATS:
        if pattern.match(value):
            return f"string:{name}"
    if _ENUM_LIKE.match(value):
        return f"string={value}"
    return "string"


def scalar_fact(value: Any) -> str:
    """The type of a JSON scalar (integers and floats apart: ``4`` and ``4.0`` differ)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return string_fact(value)
    raise TypeError(f"not a JSON scalar: {value!r}")


def json_facts(document: Any, prefix: str = "$") -> Facts:
    """Every key path of ``document`` with its type; array elements share the path ``[]`` and their
    facts are merged (several kinds at one path are joined with ``|``)."""
    facts: Facts = {}
    _walk(document, prefix, facts)
    return facts


def _add(facts: Facts, path: str, fact: str) -> None:
    known = facts.get(path)
    if known is None:
        facts[path] = fact
    elif fact not in known.split("|"):
        facts[path] = "|".join(sorted(set(known.split("|")) | {fact}))


def _walk(value: Any, path: str, facts: Facts) -> None:
    if isinstance(value, dict):
        _add(facts, path, "object")
        for key, item in value.items():
            _walk(item, f"{path}.{key}", facts)
    elif isinstance(value, list):
        _add(facts, path, "array" if value else "array(empty)")
        for item in value:
            _walk(item, f"{path}[]", facts)
    else:
        _add(facts, path, scalar_fact(value))
