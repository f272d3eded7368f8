"""The queues in a database of their own (issue #30 item 3: ``PGMQ_DATABASE_URL``, upstream's
``common.pgmq_database.url``).

- `tasker-worker migrate` with both URLs: PGMQ (and its helpers in schema tasker) in the queue database
  only, the task tables in the main database only; a second run applies nothing.
- The mixed fleet (test_mixed_fleet.py's 250 tasks: at a fifth of them, upstream's worker sometimes
  read no result of ours, a check that needs the counts): our companion orchestration,
  OUR worker (`tasker-dev run`) and UPSTREAM's worker (PyPI tasker-py 0.1.8), all given the queue
  database, the task requests sent on its orchestration_task_requests. Judged by test_mixed_fleet.py's
  functions (every task terminal with its expected state and results, cross reads, at most one result
  per attempt, ours never over upstream's claim, no error in our logs); then: the queue database's
  queues carried the run's messages and are drained (upstream's queues holding only messages of
  finished steps, as test_mixed_fleet.py explains), and the main database's queues were never used
  (it has no PGMQ, or its queues never received a message and archived none)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from conftest import Cluster, Database, Tools, create_databases, drop_databases, migrate
from test_mixed_fleet import (KINDS, OURS_NAMESPACES, UPSTREAM_NAMESPACES, UPSTREAM_QUEUES, _error_lines, _leftovers,
                              _submit_all, _wait_for_empty_queues, _wait_until_all_terminal, assert_fleet_figures,
                              judge_run, start_fleet)

#: Tables of the task database (migrations/0002) that a queue database must not have.
TASK_TABLES = ("tasks", "task_transitions", "workflow_steps", "workflow_step_transitions", "named_tasks",
               "task_namespaces")
#: What a queue database must have besides PGMQ: the send-with-NOTIFY helper and the queue creator.
QUEUE_FUNCTIONS = ("pgmq_send_with_notify", "create_queue")


def _has_pgmq(db: Database) -> bool:
    return db.scalar("SELECT to_regnamespace('pgmq') IS NOT NULL OR EXISTS"
                     " (SELECT FROM pg_extension WHERE extname = 'pgmq')") == "t"


def _tables(db: Database, names: tuple[str, ...]) -> set[str]:
    """Which of ``names`` exist as tables of schema tasker."""
    text = db.scalar("SELECT string_agg(tablename, ',') FROM pg_tables WHERE schemaname = 'tasker'"
                     f" AND tablename IN ({', '.join(repr(n) for n in names)})")
    return set(text.split(",")) if text else set()


def _functions(db: Database, names: tuple[str, ...]) -> set[str]:
    text = db.scalar("SELECT string_agg(DISTINCT p.proname, ',') FROM pg_proc p JOIN pg_namespace n"
                     f" ON n.oid = p.pronamespace WHERE n.nspname = 'tasker' AND p.proname IN"
                     f" ({', '.join(repr(n) for n in names)})")
    return set(text.split(",")) if text else set()


def _ledger(db: Database) -> list[str]:
    """The migration ledger (public.tasker_worker_migrations): one line per applied file."""
    text = db.scalar("SELECT string_agg(filename || ' ' || checksum || ' ' || applied_at, E'\\n' ORDER BY filename)"
                     " FROM public.tasker_worker_migrations")
    return text.splitlines() if text else []


def _queue_use(db: Database) -> dict[str, dict[str, int]] | None:
    """None without PGMQ; else per queue of ``db``: messages ever sent (its msg_id sequence), queued
    and archived, where any is not zero."""
    if not _has_pgmq(db):
        return None
    queues = (db.scalar("SELECT string_agg(queue_name, ',') FROM pgmq.meta") or "").split(",")
    use = {}
    for queue in filter(None, queues):
        row = db.json(f"SELECT json_build_object('sent', (SELECT total_messages FROM pgmq.metrics('{queue}')),"
                      f" 'queued', (SELECT count(*) FROM pgmq.q_{queue}),"
                      f" 'archived', (SELECT count(*) FROM pgmq.a_{queue}))")
        if any(row.values()):
            use[queue] = row
    return use


def test_migrate_with_a_queue_database_splits_the_schema_and_a_second_run_applies_nothing(tools: Tools) -> None:
    """PGMQ and its helpers only in the queue database, the task tables only in the main one;
    the second run leaves both ledgers as they were."""
    name = f"pytest_{os.getpid()}_migrate_split"
    names = (f"{name}_main", f"{name}_queues")
    main_url, queue_url = create_databases(tools, *names)
    try:
        first = migrate(tools, main_url, queue_url)
        assert first.returncode == 0, f"migrate failed:\n{first.stdout}{first.stderr}"
        main, queues = Database(main_url), Database(queue_url)
        assert not _has_pgmq(main), f"PGMQ in the main database:\n{first.stdout}"
        assert _has_pgmq(queues), f"no PGMQ in the queue database:\n{first.stdout}"
        assert _tables(main, TASK_TABLES) == set(TASK_TABLES), first.stdout
        assert _tables(queues, TASK_TABLES) == set(), f"task tables in the queue database:\n{first.stdout}"
        assert _functions(queues, QUEUE_FUNCTIONS) == set(QUEUE_FUNCTIONS), first.stdout
        ledgers = (_ledger(main), _ledger(queues))
        assert all(ledgers), f"an empty migration ledger: {ledgers}\n{first.stdout}"

        second = migrate(tools, main_url, queue_url)
        assert second.returncode == 0, f"second migrate failed:\n{second.stdout}{second.stderr}"
        assert (_ledger(main), _ledger(queues)) == ledgers, f"the second run applied something:\n{second.stdout}"
        assert not _has_pgmq(main), f"the second run put PGMQ into the main database:\n{second.stdout}"
    finally:
        drop_databases(tools, *names)


def test_mixed_fleet_with_the_queues_in_their_own_database(queue_db_cluster: Cluster, tmp_path: Path) -> None:
    """A few hundred tasks through both workers, the queues in their own database; every check of the
    module docstring."""
    cluster = queue_db_cluster
    ours, upstream = start_fleet(cluster, tmp_path)
    total = sum(kind.count for kind in KINDS)
    started = time.monotonic()
    _submit_all(cluster)
    _wait_until_all_terminal(cluster, total, timeout=150)
    elapsed = time.monotonic() - started

    histories, figures, _, wrong = judge_run(cluster, KINDS)
    assert wrong == [], f"{len(wrong)} tasks ended wrongly, e.g. {wrong[:3]}"
    left = _wait_for_empty_queues(cluster)
    stale = _leftovers(cluster, list(UPSTREAM_QUEUES))
    used = _queue_use(cluster.queue_db) or {}
    report = {"tasks": total, "seconds": round(elapsed, 1), "steps": figures.steps, "claims": dict(figures.claims),
              "results": dict(figures.results), "double_claims": dict(figures.double_claims),
              "double_results": figures.double_results, "cross_reads": dict(figures.cross), "queued": left,
              "upstream_stale_messages": len(stale), "queue_database": used,
              "main_database_queues": _queue_use(cluster.db)}
    (cluster.directory / "figures.json").write_text(json.dumps(report, indent=2))
    print("mixed fleet, queues in their own database:", json.dumps(report))

    assert_fleet_figures(histories, figures, report)
    assert report["main_database_queues"] in (None, {}), f"the main database's queues were used: {report}"
    carried = {f"worker_{ns}_queue" for ns in set(OURS_NAMESPACES) | set(UPSTREAM_NAMESPACES)} | {
        "orchestration_task_requests", "orchestration_step_results"}
    assert carried <= {queue for queue, use in used.items() if use["sent"]}, f"queues that carried nothing: {report}"
    assert left == {}, f"{report}; left: {_leftovers(cluster, list(left))[:5]}"
    unfinished = [m for m in stale if m["step_state"] not in ("complete", "error")]
    assert unfinished == [], f"messages of unfinished steps left: {unfinished[:5]}"
    assert upstream.process.terminate() == 0, upstream.process.log_tail()
    for process in (ours, cluster.processes[0]):
        assert _error_lines(process) == [], f"{process.log}: {_error_lines(process)[:10]}"
