"""The steady load: task requests (the TaskRequestMessage `tasker-dev submit` sends) on
orchestration_task_requests at a fixed rate, each with a unique `chaos_id` in its context; `db` is the
queue database (the run's `qdb`). A send whose outcome is unknown (the connection died) is sent again:
the orchestration must then create the task once (identity strategy `strict`), which the judge checks."""
import json
import threading
import time
import uuid

from .common import log

# (namespace, name, weight, context maker). retry_workflow is left out: its confirm step checks that
# fetch took exactly two attempts, which a fault during fetch legitimately changes.
WORKFLOWS = [
    ("examples", "linear_workflow", 3, lambda r: {"number": r.randint(1, 100000)}),
    ("examples", "diamond_workflow", 2, lambda r: {"number": r.randint(1, 100000)}),
    ("examples", "tree_workflow", 1, lambda r: {"number": r.randint(1, 100000)}),
    ("examples", "decision_workflow", 1, lambda r: {"amount": r.randint(1, 2000)}),
    ("examples", "batch_workflow", 1, lambda r: {"item_count": r.randint(0, 100)}),
    ("chaos", "hold_workflow", 3, lambda r: {"number": r.randint(1, 100000)}),
]

SEND = "SELECT tasker.pgmq_send_with_notify('orchestration_task_requests'::text, %s::jsonb, 0)"


def request_message(namespace, name, context, initiator="chaos"):
    return {"request_id": str(uuid.uuid4()), "metadata": {},
            "task_request": {"namespace": namespace, "name": name, "version": "1.0.0", "context": context,
                             "initiator": initiator, "source_system": "chaos", "reason": "scripts/chaos",
                             "tags": [], "priority": 0}}


class Load:
    def __init__(self, db, rng, rate, run_tag):
        self.db, self.rng, self.rate, self.run_tag = db, rng, rate, run_tag
        self.submitted = {}     # chaos_id -> (namespace, name, context, first send time)
        self.resent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        weights = [w for (_, _, w, _) in WORKFLOWS]
        self._choices = [wf for wf, w in zip(WORKFLOWS, weights) for _ in range(w)]

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join()

    def _run(self):
        index = 0
        next_at = time.time()
        while not self._stop.is_set():
            delay = next_at - time.time()
            if delay > 0 and self._stop.wait(delay):
                break
            namespace, name, _, make = self.rng.choice(self._choices)
            chaos_id = f"{self.run_tag}-{index}"
            context = {**make(self.rng), "chaos_id": chaos_id}
            self._send(chaos_id, namespace, name, context)
            index += 1
            next_at = max(next_at + 1.0 / self.rate, time.time() - 1.0)

    def _send(self, chaos_id, namespace, name, context):
        body = json.dumps(request_message(namespace, name, context))
        self.submitted[chaos_id] = (namespace, name, context, time.time())
        attempts, give_up = 0, time.time() + 120
        while time.time() < give_up:
            rows, error = self.db.try_q(SEND, (body,))
            if error is None:
                return
            attempts += 1
            self.resent += 1
            if attempts == 1:
                log(f"load: send of {chaos_id} failed ({type(error).__name__}); sending again until it succeeds")
            time.sleep(0.2)
        del self.submitted[chaos_id]
        log(f"load: {chaos_id} could not be sent for 120 s; not counted")
