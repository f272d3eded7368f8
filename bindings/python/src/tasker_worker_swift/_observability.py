"""Upstream's observability shapes (what ``get_health_check``, ``get_metrics`` and
``get_worker_config`` of ``tasker_core._tasker_core`` return), built from the worker's
``/health/detailed``, ``/metrics/worker`` and ``/config`` bodies and its status."""

from __future__ import annotations

import platform
from typing import Any

from . import _library as lib


def health(detailed: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """Upstream's health dict from the ``/health/detailed`` body and the worker status."""
    components: dict[str, dict[str, Any]] = {}
    checks = detailed.get("checks") if isinstance(detailed.get("checks"), dict) else {}
    for name, check in checks.items():
        check_status = check.get("status", "unknown") if isinstance(check, dict) else str(check)
        components[name] = {"name": name, "status": check_status}
    database = components.setdefault("database", {"name": "database", "status": detailed.get("status", "unknown")})
    database["pool_size"] = status.get("database_pool_size")
    database["pool_idle"] = status.get("database_pool_idle")
    return {
        "status": detailed.get("status", "unknown"),
        "is_running": bool(status.get("running", False)),
        "components": components,
        "rust": {"library_version": lib.version(), "worker_id": status.get("worker_id")},
        "python": {"version": platform.python_version()},
        "swift": detailed,
    }


def metrics(body: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """Upstream's flat metrics dict from the ``/metrics/worker`` body (+ ``ffi_dispatch``) and the status."""
    dispatch = body.get("ffi_dispatch") if isinstance(body.get("ffi_dispatch"), dict) else {}
    values = _metric_values(body)
    succeeded = int(values.get("steps_succeeded", values.get("steps_completed", 0)))
    failed = int(values.get("steps_failed", 0))
    return {
        "dispatch_channel_pending": int(dispatch.get("pending_count", 0)),
        "oldest_pending_age_ms": dispatch.get("oldest_pending_age_ms"),
        "newest_pending_age_ms": dispatch.get("newest_pending_age_ms"),
        "starvation_detected": bool(dispatch.get("starvation_detected", False)),
        "starving_event_count": int(dispatch.get("starving_event_count", 0)),
        "database_pool_size": int(status.get("database_pool_size") or 0),
        "database_pool_idle": int(status.get("database_pool_idle") or 0),
        "environment": status.get("environment"),
        "steps_processed": int(values.get("steps_processed", succeeded + failed)),
        "steps_succeeded": succeeded,
        "steps_failed": failed,
        "steps_in_progress": int(values.get("steps_in_progress", 0)),
        "swift": body,
    }


def _metric_values(body: dict[str, Any]) -> dict[str, float]:
    """Numeric values of the ``/metrics/worker`` body (``{"metrics": {name: {"value": …}}}``), by
    name without a ``tasker_worker_``/``worker_`` prefix or ``_total`` suffix."""
    values: dict[str, float] = {}
    metrics = body.get("metrics") if isinstance(body.get("metrics"), dict) else {}
    for name, metric in metrics.items():
        value = metric.get("value") if isinstance(metric, dict) else metric
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            short = name
            for prefix in ("tasker_worker_", "worker_"):
                short = short.removeprefix(prefix)
            values[short.removesuffix("_total")] = value
    return values


def worker_config(body: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """Upstream's flat configuration dict from the ``/config`` body and the status."""
    worker = _find(body, "worker") or {}
    channels = _find(worker, "mpsc_channels") or {}
    handler_dispatch = _find(channels, "handler_dispatch") or {}
    ffi_dispatch = _find(channels, "ffi_dispatch") or {}
    return {
        "environment": status.get("environment"),
        "supported_namespaces": list(status.get("supported_namespaces") or []),
        "web_api_enabled": bool(status.get("web_api_enabled", False)),
        "database_pool_size": int(status.get("database_pool_size") or 0),
        "polling_interval_ms": 0,
        "starvation_threshold_ms": int(ffi_dispatch.get("starvation_warning_threshold_ms", 10000)),
        "completion_timeout_ms": int(ffi_dispatch.get("completion_timeout_ms", 30000)),
        "max_concurrent_handlers": int(handler_dispatch.get("max_concurrent_handlers", 10)),
        "handler_timeout_ms": int(handler_dispatch.get("handler_timeout_ms", 30000)),
        "swift": body,
    }


def _find(tree: Any, key: str) -> dict[str, Any] | None:
    """``tree[key]`` when it is a dict, else the first dict under that key one level down
    (the ``/config`` body nests the configuration under a top-level key)."""
    if not isinstance(tree, dict):
        return None
    if isinstance(tree.get(key), dict):
        return tree[key]
    for value in tree.values():
        if isinstance(value, dict) and isinstance(value.get(key), dict):
            return value[key]
    return None
