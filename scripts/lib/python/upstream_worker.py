"""Running upstream's own worker (PyPI tasker-py 0.1.8: upstream's compiled Rust `tasker-worker` in a
Python extension) next to ours: its configuration file and its database URL. Shared by the binding
tests (bindings/python/tests) and the benchmarks (Benchmarks/benchlib); standard library only.

What upstream needs, seen here: ONE pre-merged TOML file in TASKER_CONFIG_PATH (it does not merge
base + environment itself; our merged test configuration works), a DATABASE_URL with a password
(`postgresql://user:password@host:port/db`; other forms abort it), and the Redis cache off when there
is no Redis (it waits ~8 s before falling back otherwise).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

#: Our merged test configuration (config/tasker/generated/worker-test.toml), relative to the repository.
MERGED_TEST_CONFIG = Path("config/tasker/generated/worker-test.toml")


def upstream_url(url: str) -> str:
    """postgresql://user@host:port/db → postgresql://user:user@host:port/db (upstream aborts on a URL
    without a password; the test and bench clusters trust local connections, so any password does)."""
    return re.sub(r"^(postgres(?:ql)?://)([^:@/]+)@", r"\1\2:\2@", url)


def merged_config(repo: Path, settings: dict[str, Any]) -> str:
    """The merged test configuration with ``settings`` ({"dotted.key": value}) applied, as TOML text.
    The Redis cache is always turned off."""
    with open(repo / MERGED_TEST_CONFIG, "rb") as f:
        config = tomllib.load(f)
    for key, value in {"common.cache.enabled": False, **settings}.items():
        _set(config, key, value)
    return "\n".join(_dump_toml(config)) + "\n"


def _set(table: dict[str, Any], dotted: str, value: Any) -> None:
    *path, last = dotted.split(".")
    for key in path:
        table = table.setdefault(key, {})
    table[last] = value


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"no TOML form for {v!r}")


def _dump_toml(table: dict[str, Any], prefix: str = "") -> list[str]:
    """A TOML document of nested dicts of scalars and arrays (of scalars or of inline tables, e.g.
    ``worker.web.auth.api_keys``)."""
    scalars = [f"{k} = {_toml_value(v)}" for k, v in table.items() if not isinstance(v, dict)]
    out = ([f"[{prefix}]"] if prefix and scalars else []) + scalars + ([""] if scalars else [])
    for k, v in table.items():
        if isinstance(v, dict):
            out += _dump_toml(v, f"{prefix}.{k}" if prefix else k)
    return out
