"""Our own API: register Python handlers and run them on the embedded Swift worker.

    from tasker_worker_swift import Worker, StepContext, success, failure

    worker = Worker()

    @worker.handler("payments.charge")
    def charge(context: StepContext):
        amount = context.input("amount")
        if amount is None:
            return failure("amount missing", retryable=False)
        return success({"charged": amount})

    worker.run()   # until SIGTERM/SIGINT, then drains and stops

A template's ``handler.method`` names the entry point: register more than ``call`` with
``@worker.handler("payments.processor", method="refund")``, or register an object whose public
methods are its entry points (``worker.register("payments.processor", PaymentHandler())``: ``call``
by default, ``refund`` when the template says ``method: refund``). A method the handler lacks is a
permanent ``method_not_found`` failure. ``handler.resolver``: this API resolves by its registrations
alone (``explicit_mapping``); a template naming another resolver gets ``handler_not_found`` saying
so. (tasker-py's own SDK, run on this worker through :mod:`tasker_worker_swift._tasker_core`,
resolves as tasker-py does.)
"""

from __future__ import annotations

import asyncio
import inspect
import signal
import threading
import time
import traceback
from typing import Any, Callable, Mapping, TypeVar, Union

from . import _library as lib
from .context import StepContext
from .results import StepResult, failure, success

HandlerReturn = Union[StepResult, Mapping[str, Any], None]
Handler = Callable[[StepContext], Any]
F = TypeVar("F", bound=Handler)


class Worker:
    """The embedded Swift worker plus threads that run Python handlers for its steps.

    Steps whose callable has a Swift handler (the built-ins ``tasker.noop|echo|fail|sleep``) run in
    Swift; every other step comes to the poll threads here. A step whose callable has no Python
    handler gets a non-retryable ``handler_not_found`` result.

    Args:
        config: the bootstrap configuration (keys of ``tasker_worker_bootstrap``: ``environment``,
            ``config_path``, ``database_url``, ``template_path``, ``web_bind_address``,
            ``grpc_bind_address``, ``log_level``, ``log_format``); unset keys come from the
            environment as for the ``tasker-worker`` daemon.
        threads: poll threads, i.e. Python handlers running at once (the C calls release the GIL).
        poll_timeout_ms: how long one poll waits for a step before the thread checks for a stop.
    """

    def __init__(self, config: Mapping[str, Any] | None = None, *, threads: int = 4, poll_timeout_ms: int = 200) -> None:
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        self.config = dict(config or {})
        self.threads = threads
        self.poll_timeout_ms = poll_timeout_ms
        self.worker_id: str | None = None
        self.bootstrap_result: dict[str, Any] | None = None
        # callable -> entry point name -> function (a registered object's methods are looked up
        # on it when a step names them: self._objects).
        self._handlers: dict[str, dict[str, Handler]] = {}
        self._objects: dict[str, Any] = {}
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()
        self._stop_requested = threading.Event()

    # ---- registration ----------------------------------------------------------------------------

    def handler(self, callable_name: str, *, method: str = "call") -> Callable[[F], F]:
        """Decorator: ``fn`` handles steps whose template ``handler.callable`` is ``callable_name``
        (and whose ``handler.method`` is ``method``; ``call`` when the template names none).

        ``fn(context)`` returns a :class:`StepResult` (``success``, ``failure``, ``decision``,
        ``batches``, ``checkpoint`` …), a ``dict`` (success with that result) or ``None`` (success,
        ``{}``); it may be ``async``. An exception becomes a retryable ``handler_error`` failure
        carrying its message, type and traceback.
        """

        def register(fn: F) -> F:
            self.register(callable_name, fn, method=method)
            return fn

        return register

    def register(self, callable_name: str, handler: Any, *, method: str = "call") -> None:
        """Registers ``handler`` for ``callable_name``: a function for the entry point ``method``
        (see :meth:`handler`), or an object whose public methods are the entry points (``call``,
        and any other a template names with ``handler.method``)."""
        if not isinstance(method, str) or not method or method.startswith("_"):
            raise ValueError(f"method must be a public method name, got {method!r}")
        if callable_name in self._objects or method in self._handlers.get(callable_name, {}):
            raise ValueError(f"a handler for {callable_name!r} (method {method!r}) is already registered")
        is_object = inspect.isclass(handler) is False and callable(getattr(handler, "call", None)) \
            and not (inspect.isfunction(handler) or inspect.ismethod(handler))
        if not is_object:
            if not callable(handler):
                raise TypeError(f"the handler for {callable_name!r} is neither callable nor an object with a call method")
            self._handlers.setdefault(callable_name, {})[method] = handler
            return
        if method != "call":
            raise TypeError(f"an object handler for {callable_name!r} brings its own methods; register it without method=")
        if callable_name in self._handlers:
            raise ValueError(f"functions are already registered for {callable_name!r}")
        self._objects[callable_name] = handler

    @property
    def callables(self) -> list[str]:
        """The registered callable names."""
        return sorted({*self._handlers, *self._objects})

    def _entry_point(self, context: StepContext) -> Handler | StepResult:
        """The function to run for the step's callable and method, or the failure saying why none."""
        if context.handler_resolver not in (None, "explicit_mapping"):
            return failure(
                f"Handler not found: {context.handler_name} (handler.resolver {context.handler_resolver!r} "
                "names no resolver of this worker's Python API; its resolver: explicit_mapping)",
                retryable=False, error_type="handler_not_found")
        method = context.handler_method
        target = self._objects.get(context.handler_name)
        if target is not None:
            entry = getattr(target, method, None) if not method.startswith("_") else None
            known = sorted(name for name in dir(target) if not name.startswith("_") and callable(getattr(target, name, None)))
        else:
            functions = self._handlers.get(context.handler_name)
            if functions is None:
                return failure(
                    f"no Python handler registered for callable {context.handler_name!r}",
                    retryable=False, error_type="handler_not_found")
            entry, known = functions.get(method), sorted(functions)
        if not callable(entry):
            return failure(
                f"handler {context.handler_name} has no method {method!r} (the template's handler.method); "
                f"its methods: {', '.join(known)}",
                retryable=False, error_type="method_not_found")
        return entry

    # ---- lifecycle -------------------------------------------------------------------------------

    def start(self) -> dict[str, Any]:
        """Bootstraps the embedded worker (returns once it serves) and starts the poll threads.

        Returns:
            the bootstrap result (``worker_id``, ``namespaces``, ``web_address``, …).

        Raises:
            TaskerWorkerError: bootstrap failed (the message says what).
        """
        self.bootstrap_result = lib.bootstrap(self.config)
        self.worker_id = self.bootstrap_result.get("worker_id")
        self._stopping.clear()
        for index in range(self.threads):
            thread = threading.Thread(target=self._poll_loop, name=f"tasker-poll-{index}", daemon=True)
            thread.start()
            self._threads.append(thread)
        lib.log(lib.LOG_INFO, "Python handlers attached", {"callables": ",".join(self.callables), "threads": str(self.threads)})
        return self.bootstrap_result

    #: How long :meth:`stop` waits for the poll threads once the worker has stopped. The worker's own
    #: drain deadline has already given a step whose handler never returned its ``handler_timeout``
    #: result; such a thread (a daemon) is left behind, logged, and ends with the process.
    stop_grace_seconds: float = 10.0

    def stop(self) -> None:
        """Graceful stop: intake stops, steps already claimed (Swift and Python) finish and their
        results are stored, then the worker stops; the poll threads keep serving until then."""
        lib.stop()
        self._stopping.set()
        deadline = time.monotonic() + self.stop_grace_seconds
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        stuck = [thread.name for thread in self._threads if thread.is_alive()]
        if stuck:
            _log_quietly(lib.LOG_WARN, "poll threads still in a handler after the stop; left behind", {"threads": ",".join(stuck)})
        self._threads.clear()

    def request_stop(self) -> None:
        """Asks :meth:`run` to stop (what SIGTERM and SIGINT do); safe from any thread."""
        self._stop_requested.set()

    def run(
        self,
        *,
        install_signal_handlers: bool = True,
        on_start: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        """:meth:`start`, wait for SIGTERM/SIGINT (or :meth:`request_stop`), then :meth:`stop`.

        Args:
            install_signal_handlers: SIGTERM and SIGINT request the stop (needs the main thread).
            on_start: called with the bootstrap result once the worker serves.
        """
        previous: dict[int, Any] = {}
        if install_signal_handlers:
            for signum in (signal.SIGTERM, signal.SIGINT):
                previous[signum] = signal.signal(signum, lambda *_: self.request_stop())
        try:
            started = self.start()
            if on_start is not None:
                on_start(started)
            while not self._stop_requested.wait(0.5):
                if not any(thread.is_alive() for thread in self._threads):
                    break
            lib.log(lib.LOG_INFO, "stopping: draining Python handlers", None)
        finally:
            try:
                if self.bootstrap_result is not None:
                    self.stop()
            finally:
                for signum, handler in previous.items():
                    signal.signal(signum, handler)

    def __enter__(self) -> "Worker":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- the poll threads ------------------------------------------------------------------------

    def _poll_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                event = lib.poll_step_event(self.poll_timeout_ms)
            except lib.TaskerWorkerError as error:
                if error.status == lib.ERR_NOT_RUNNING:
                    return
                _log_quietly(lib.LOG_ERROR, f"poll failed: {error}")
                time.sleep(0.1)
                continue
            if event is not None:
                self._process_guarded(event)

    def _process_guarded(self, event: Mapping[str, Any]) -> None:
        """``process``, but nothing it raises ends the poll thread: an unexpected exception becomes
        the step's retryable ``handler_error`` (a poll thread that died would leave every later step
        of this host ``in_progress``)."""
        started = time.monotonic()
        try:
            self.process(event)
        except Exception as error:  # noqa: BLE001 - the poll thread must survive anything
            step_uuid = str(event.get("step_uuid", "")) if isinstance(event, Mapping) else ""
            event_id = str(event.get("event_id", "")) if isinstance(event, Mapping) else ""
            _log_quietly(lib.LOG_ERROR, f"step event failed: {type(error).__name__}: {error}", {"step_uuid": step_uuid})
            try:
                self._complete(event_id, step_uuid, failure(
                    f"{type(error).__name__}: {error}", retryable=True, error_type="handler_error"), started)
            except Exception:  # noqa: BLE001 - the channel's event timeout settles it then
                pass

    def process(self, event: Mapping[str, Any]) -> None:
        """Runs the handler of one polled step event and completes (or checkpoints) the event."""
        started = time.monotonic()
        event_id = str(event.get("event_id", ""))
        try:
            context = StepContext.from_event(event)
        except Exception as error:  # noqa: BLE001 - a malformed event still gets a result
            self._complete(event_id, str(event.get("step_uuid", "")), failure(
                f"malformed step event: {error}", retryable=False, error_type="event_error"), started)
            return
        outcome = self._invoke(context)
        if outcome.checkpoint is not None:
            try:
                lib.checkpoint_yield_step_event(event_id, {"step_uuid": context.step_uuid, **outcome.checkpoint})
                return
            except (lib.TaskerWorkerError, ValueError) as error:
                if isinstance(error, lib.TaskerWorkerError) and error.status == lib.ERR_UNKNOWN_EVENT:
                    _log_quietly(lib.LOG_WARN, f"checkpoint not accepted: {error.message}", {"step_uuid": context.step_uuid})
                    return
                outcome = failure(f"checkpoint refused: {error}", retryable=True, error_type="checkpoint_error")
        self._complete(event_id, context.step_uuid, outcome, started)

    def _invoke(self, context: StepContext) -> StepResult:
        fn = self._entry_point(context)
        if isinstance(fn, StepResult):
            return fn
        try:
            returned = fn(context)
            if inspect.isawaitable(returned):
                returned = asyncio.run(_await(returned))
        except Exception as error:  # noqa: BLE001 - every handler error becomes a step result
            return failure(
                str(error) or type(error).__name__,
                retryable=True,
                error_type="handler_error",
                # tasker-py's keys: what `task show`, `submit --wait` and the console show.
                metadata={"exception_type": type(error).__name__, "traceback": traceback.format_exc(limit=20)},
            )
        if isinstance(returned, StepResult):
            return returned
        if returned is None:
            return success()
        if isinstance(returned, Mapping):
            return success(dict(returned))
        return failure(
            f"handler {context.handler_name!r} returned {type(returned).__name__}; expected a StepResult, dict or None",
            retryable=False,
            error_type="handler_error",
        )

    def _complete(
        self, event_id: str, step_uuid: str, outcome: StepResult, started: float, *, fallback: bool = True
    ) -> None:
        elapsed_ms = int((time.monotonic() - started) * 1000)
        try:
            lib.complete_step_event(event_id, outcome.execution_result(step_uuid, elapsed_ms, self.worker_id))
        except ValueError as error:  # the result is not JSON (or nested too deeply to write)
            if fallback:
                self._complete(event_id, step_uuid, failure(
                    f"the handler's result is not JSON: {error}", retryable=False, error_type="handler_error"),
                    started, fallback=False)
        except lib.TaskerWorkerError as error:
            if fallback and error.status == lib.ERR_INVALID_ARGUMENT:
                # The worker refused the result itself (e.g. nested past its limit): the step fails
                # for good saying why, rather than waiting out the event's timeout.
                self._complete(event_id, step_uuid, failure(
                    f"the worker refused the handler's result: {error.message}", retryable=False,
                    error_type="handler_error"), started, fallback=False)
                return
            _log_quietly(lib.LOG_WARN, f"result not accepted: {error.message}", {"step_uuid": step_uuid})


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _log_quietly(level: int, message: str, fields: dict[str, str] | None = None) -> None:
    try:
        lib.log(level, message, fields)
    except Exception:  # noqa: BLE001 - logging must not fail the poll thread
        pass
