"""Recovery times, from the transitions the database recorded.

- resume: from the moment a fault struck to the first step `complete` whose `enqueued` came after
  it, i.e. until the whole loop (orchestration → worker → orchestration) moved new work again;
- stranded (SIGKILL of a worker): from the kill to the next transition of each step the dead worker
  held `in_progress`, i.e. until its steps were handed back for a retry (the slowest one counts)."""

RESUME = """SELECT extract(epoch FROM min(c.created_at))::float8
              FROM tasker.workflow_step_transitions c
              JOIN tasker.workflow_step_transitions e
                ON e.workflow_step_uuid = c.workflow_step_uuid AND e.to_state = 'enqueued'
             WHERE c.to_state = 'complete' AND e.created_at >= to_timestamp(%s)
               AND c.created_at >= e.created_at"""

NEXT = """SELECT extract(epoch FROM min(created_at))::float8 FROM tasker.workflow_step_transitions
           WHERE workflow_step_uuid = %s::uuid AND sort_key > %s"""


def recovery(run):
    """Fills each fault record's `resume_s` / `stranded_*`; returns (max seconds, its kind)."""
    worst, worst_kind = 0.0, None
    for record in run.faults:
        if "error" in record:
            continue
        at = run.db.one(RESUME, (record["hit"],))
        if at is None:
            run.failures.append(f"throughput did not resume after {record['kind']} at "
                                f"{record['start'] - run.t0:.0f} s (no new step completed)")
            record["resume_s"] = None
        else:
            record["resume_s"] = round(at - record["hit"], 2)
            if record["resume_s"] > worst:
                worst, worst_kind = record["resume_s"], record["kind"]
        if record["kind"] == "sigkill_worker":
            stranded = record.get("stranded", [])
            record["stranded_steps"] = len(stranded)
            slowest, lost = 0.0, []
            for step, sort_key in stranded:
                nxt = run.db.one(NEXT, (step, sort_key))
                if nxt is None:
                    lost.append(step)
                else:
                    slowest = max(slowest, nxt - record["killed_at"])
            record["stranded_recovered_s"] = round(slowest, 2) if stranded and not lost else None
            if lost:
                run.failures.append(
                    f"{len(lost)} of {len(stranded)} steps held in_progress by the SIGKILLed worker "
                    f"{record.get('dead_worker_uuid')} were never retried (e.g. {lost[:3]})")
            elif stranded and slowest > worst:
                worst, worst_kind = slowest, "sigkill_worker (stranded steps)"
    return round(worst, 2), worst_kind
