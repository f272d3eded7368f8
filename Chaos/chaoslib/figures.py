"""Recovery times, from the transitions the database recorded.

- resume: from the moment a fault struck to the first step `complete` whose `enqueued` came after
  it, i.e. until the whole loop (orchestration → worker → orchestration) moved new work again;
- stranded (SIGKILL of a worker, or of a quarter of the fleet): from the kill to the next transition of
  each step the dead workers held `in_progress`, i.e. until its steps were handed back for a retry (the
  slowest one counts; the fleet profile also records each step's time and checks the slowest against
  `recovery_bound_s`, issue #29's 10 s)."""

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
        if record["kind"] in ("sigkill_worker", "sigkill_quarter"):
            stranded = record.get("stranded", [])
            record["stranded_steps"] = len(stranded)
            slowest, lost, each = 0.0, [], []
            for step, sort_key in stranded:
                nxt = run.db.one(NEXT, (step, sort_key))
                if nxt is None:
                    lost.append(step)
                else:
                    each.append(round(nxt - record["killed_at"], 2))
                    slowest = max(slowest, nxt - record["killed_at"])
            record["stranded_recovered_s"] = round(slowest, 2) if stranded and not lost else None
            if record["kind"] == "sigkill_quarter":
                record["stranded_recovered_each_s"] = sorted(each)
            who = (f"SIGKILLed worker {record.get('dead_worker_uuid')}" if record["kind"] == "sigkill_worker"
                   else f"{len(record.get('victims', {}))} SIGKILLed workers ({', '.join(record.get('victims', {}))})")
            if lost:
                run.failures.append(f"{len(lost)} of {len(stranded)} steps held in_progress by the {who} "
                                    f"were never retried (e.g. {lost[:3]})")
            elif stranded and slowest > worst:
                worst, worst_kind = slowest, f"{record['kind']} (stranded steps)"
            bound = run.profile.get("recovery_bound_s")
            if bound is not None and stranded and not lost and slowest > bound:
                run.failures.append(f"the steps held by the {who} were recovered in {slowest:.1f} s "
                                    f"(more than {bound} s, issue #29's bound)")
            if record["kind"] == "sigkill_quarter" and not stranded:
                run.warnings.append("the SIGKILLed quarter held no step in_progress: recovery not measured")
    return round(worst, 2), worst_kind


CLAIMS = """SELECT metadata->>'worker_uuid', count(*) FROM tasker.workflow_step_transitions
             WHERE to_state = 'in_progress' GROUP BY 1"""


def claims_by_worker(run):
    """The fleet profile: the steps each worker claimed (every start of it), and per connection mode
    (pooler+listen, pooler+poll, direct): that both halves of the fleet worked, and how evenly."""
    owner = {uuid: p.name for p in run.fleet.workers() for uuid in p.worker_uuids}
    per_worker = {p.name: 0 for p in run.fleet.workers()}
    unknown = 0
    for uuid, n in run.db.q(CLAIMS):
        if uuid in owner:
            per_worker[owner[uuid]] += n
        else:
            unknown += n
    per_mode = {}
    for name, n in per_worker.items():
        per_mode[run.fleet.specs[name].mode] = per_mode.get(run.fleet.specs[name].mode, 0) + n
    counts = list(per_worker.values())
    run.figures["claims"] = {"per_worker": per_worker, "per_mode": per_mode, "not_ours": unknown,
                             "min": min(counts), "max": max(counts)}
    for mode, n in per_mode.items():
        if n == 0:
            run.warnings.append(f"the {mode} workers claimed no step")
