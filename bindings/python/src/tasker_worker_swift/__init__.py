"""Python step handlers for the Swift Tasker worker.

The worker daemon (claim, dispatch, completion, domain events, REST and gRPC) runs inside this
process through the C ABI of ``libTaskerWorkerFFI.so``; steps whose callable has no Swift handler
come to Python handlers registered on a :class:`Worker`.

Two APIs:

* :class:`Worker` with ``@worker.handler("callable")``, :class:`StepContext` and the result
  helpers (:func:`success`, :func:`failure`, :func:`decision`, :func:`batches`, :func:`checkpoint` …);
* :mod:`tasker_worker_swift._tasker_core`: a drop-in for tasker-py's ``tasker_core._tasker_core``
  extension, so that tasker-py's own SDK runs on this worker (see that module).
"""

from ._library import LibraryNotFoundError, TaskerWorkerError, library_path
from ._version import __version__
from .context import Checkpoint, RetryInfo, StepContext
from .results import (
    StepResult,
    batches,
    checkpoint,
    cursor_configs,
    decision,
    failure,
    no_batches,
    no_branches,
    success,
)
from .worker import Worker

__all__ = [
    "__version__",
    "Worker",
    "StepContext",
    "Checkpoint",
    "RetryInfo",
    "StepResult",
    "success",
    "failure",
    "decision",
    "no_branches",
    "batches",
    "no_batches",
    "cursor_configs",
    "checkpoint",
    "TaskerWorkerError",
    "LibraryNotFoundError",
    "library_path",
    "install_as_tasker_core",
]


def install_as_tasker_core() -> None:
    """Puts :mod:`tasker_worker_swift._tasker_core` in place of tasker-py's compiled extension
    (``sys.modules["tasker_core._tasker_core"]``); call before ``import tasker_core``."""
    import sys

    from . import _tasker_core

    sys.modules["tasker_core._tasker_core"] = _tasker_core
