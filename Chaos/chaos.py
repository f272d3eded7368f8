#!/usr/bin/env python3
"""The chaos driver behind scripts/chaos (issue #14). Run it through scripts/chaos, which installs
what is missing, finds or builds the debug binaries, starts and migrates a throw-away PostgreSQL.

Phases: start the fleet (two workers, the orchestration; the fleet profile: PgBouncer and sixteen
workers behind it) → steady load → the faults in a seeded order, `gap` seconds apart → stop the load →
wait (bounded) for quiescence → judge → figures → one summary line. With --queue-admin-url (scripts/chaos
--queue-database) the queues live in a database of their own: `qdb` is where every queue statement goes
(task requests, poison, notifications, depths), `db` the task tables; without it both are one.
Modules: chaoslib/processes (fleet), load, faults, poison (hostile inputs), judge, figures (recovery
times); PgBouncer is scripts/lib/python/pgbouncer.py (shared with scripts/bench)."""
import argparse
import json
import os
import random
import shutil
import sys
import time

sys.dont_write_bytecode = True   # no __pycache__ in the repository
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts", "lib", "python"))

from chaoslib import faults, figures, judge  # noqa: E402
from chaoslib.common import Database, log, tail  # noqa: E402
from chaoslib.load import Load  # noqa: E402
from chaoslib.processes import Fleet, WorkerSpec, free_port  # noqa: E402
from pgbouncer import PgBouncer  # noqa: E402

# rate: tasks per second; repeat: each fault kind this many times; gap: seconds between faults;
# warmup: load before the first fault; settle: load after the last; quiescence: the bound on the wait;
# claims_at_signal: a worker is signalled once it holds this many steps in_progress (waited for ≤ 15 s).
PROFILES = {
    "short": {"rate": 4, "repeat": 1, "gap": 10, "warmup": 8, "settle": 8, "quiescence": 90,
              "claims_at_signal": 2, "poison_per_queue": 100, "notifications": 60, "bad_requests": 36},
    "full": {"rate": 8, "repeat": 3, "gap": 14, "warmup": 10, "settle": 15, "quiescence": 180,
             "claims_at_signal": 4, "poison_per_queue": 300, "notifications": 200, "bad_requests": 120},
    # Issue #29: `workers` workers behind PgBouncer (transaction mode), every other one with a direct
    # LISTEN session (listen_url), the others polling; small pools (pool: max, min); SIGKILL of a quarter
    # of them at once (their steps recovered within recovery_bound_s) and a PgBouncer restart among the
    # faults. claims_at_signal: what the quarter holds together.
    "fleet": {"rate": 4, "repeat": 1, "gap": 12, "warmup": 10, "settle": 10, "quiescence": 120,
              "claims_at_signal": 3, "poison_per_queue": 100, "notifications": 60, "bad_requests": 36,
              "workers": 16, "pool": [4, 1], "recovery_bound_s": 10, "pgbouncer_pool_size": 20},
}


def _seconds(value):
    return "never" if value is None else f"{value}s"


class Chaos:
    def __init__(self, args):
        self.args = args
        self.profile = PROFILES[args.profile]
        self.rng = random.Random(args.seed)
        self.db = Database(args.admin_url)
        self.qdb = Database(args.queue_admin_url) if args.queue_admin_url else self.db
        self.failures, self.faults, self.figures = [], [], {}
        self.failing_logs = set()
        self.warnings = []
        self.poison_sent = self.notifications_sent = self.bad_requests_sent = 0
        self.pooler = None
        self.t0 = time.time()

    def templates(self):
        """config/tasks/examples plus Chaos/templates in one directory (TASKER_TEMPLATE_PATH)."""
        target = os.path.join(self.args.work, "templates")
        shutil.copytree(os.path.join(self.args.repo, "config", "tasks", "examples"), os.path.join(target, "examples"))
        shutil.copytree(os.path.join(self.args.repo, "Chaos", "templates"), os.path.join(target, "chaos"))
        return target

    def schedule(self):
        kinds = (faults.FLEET_KINDS if self.args.profile == "fleet" else faults.KINDS) * self.profile["repeat"]
        self.rng.shuffle(kinds)
        return kinds

    def fleet_specs(self):
        """Starts PgBouncer and returns the fleet profile's workers: worker-01 … worker-NN. Route
        `transaction` (the profile): the url through PgBouncer with transaction_pooler = true, the
        odd-numbered ones with a direct listen_url, the even-numbered ones none (no LISTEN: they poll).
        `direct` (development, for binaries without pooler mode, which refuse any pooler): the workers
        connected directly; PgBouncer still runs and is restarted, unused."""
        a = self.args
        self.pooler = PgBouncer(a.pgbouncer_dir, server_host="127.0.0.1", server_port=a.pg_port,
                                port=free_port(), admin_user=a.admin_user, pool_mode="transaction",
                                default_pool_size=self.profile["pgbouncer_pool_size"],
                                os_user=a.pg_os_user or None)
        self.pooler.start()
        log(f"PgBouncer (transaction mode) on port {self.pooler.port}, log {self.pooler.log_path}"
            + (" — unused: the fleet is connected directly" if a.fleet_route == "direct" else ""))
        specs = []
        for i in range(1, self.profile["workers"] + 1):
            name = f"worker-{i:02d}"
            if a.fleet_route == "direct":
                specs.append(WorkerSpec(name, a.db_url))
            else:
                specs.append(WorkerSpec(name, self._pooled_url(), transaction_pooler=True,
                                        listen_url=a.db_url if i % 2 == 1 else None))
        return specs

    def _pooled_url(self):
        database = self.args.db_url.rsplit("/", 1)[1]
        return self.pooler.url(database, self.args.db_url.split("//", 1)[1].split("@", 1)[0])

    def sample_sessions(self, when):
        """The fleet profile: PostgreSQL's sessions of role tasker (the orchestration's and the direct
        LISTEN sessions included) and PgBouncer's client connections and server sessions, now."""
        if self.args.profile != "fleet":
            return
        sample = {"postgres_tasker_sessions": self.db.one(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = 'tasker' AND backend_type = 'client backend'")}
        if self.pooler is not None:
            try:
                pools = [r for r in self.pooler.show("POOLS", self.args.psql) if r.get("database") != "pgbouncer"]
                sample["pgbouncer_clients"] = sum(int(r.get("cl_active") or 0) + int(r.get("cl_waiting") or 0)
                                                  for r in pools)
                sample["pgbouncer_server_sessions"] = self.pooler.server_sessions(self.args.psql)
            except Exception as error:
                self.warnings.append(f"PgBouncer's SHOW POOLS failed ({when}): {error}")
        self.figures.setdefault("sessions", {})[when] = sample
        log(f"sessions {when}: " + ", ".join(f"{k}={v}" for k, v in sample.items()))

    def stop_pooler(self):
        if self.pooler is None:
            return
        try:
            self.figures["pgbouncer_server_sessions_at_end"] = self.pooler.server_sessions(self.args.psql)
        except Exception as error:
            self.warnings.append(f"PgBouncer's SHOW POOLS failed at the end: {error}")
        self.pooler.stop()
        try:
            shutil.copy(self.pooler.log_path, os.path.join(self.args.work, "pgbouncer.log"))
        except OSError as error:
            self.warnings.append(f"PgBouncer's log not copied: {error}")

    def run(self):
        p = self.profile
        self.fleet = None
        try:
            specs = self.fleet_specs() if self.args.profile == "fleet" else None
            self.fleet = Fleet(self.args, self.args.work, self.templates(), specs, p.get("pool"))
            self.load = Load(self.qdb, self.rng, p["rate"], f"s{self.args.seed}")
            started = time.time()
            self.fleet.start_all()
            self.figures["fleet_ready_s"] = round(time.time() - started, 1)
            self.fleet.watch()
            self.load.start()
            log(f"load: {p['rate']} tasks/s; faults: {', '.join(self.schedule_kinds)}")
            time.sleep(p["warmup"])
            self.sample_sessions("under_load")
            for kind in self.schedule_kinds:
                started = time.time()
                self.faults.append(faults.inject(self, kind))
                time.sleep(max(0.0, p["gap"] - (time.time() - started)))
            time.sleep(p["settle"])
            self.sample_sessions("after_faults")
            self.load.stop()
            log(f"load stopped: {len(self.load.submitted)} tasks submitted ({self.load.resent} sends repeated)")
            waited = judge.wait_for_quiescence(self, p["quiescence"])
            self.figures["quiescent_after_s"] = None if waited is None else round(waited, 1)
            self.failures.extend(self.fleet.failures)
            judge.judge(self)
            self.figures["max_recovery_s"], self.figures["max_recovery_kind"] = figures.recovery(self)
            if self.args.profile == "fleet":
                figures.claims_by_worker(self)
        finally:
            if self.fleet is not None:
                self.fleet.stop_all()
            self.stop_pooler()
        for p_ in self.fleet.processes.values():
            for at, status, sig in p_.exit_statuses[-1:]:
                if sig == "SIGTERM" and status != 0:
                    self.failures.append(f"{p_.name} exited with status {status} at the final SIGTERM")
                    self.failing_logs.add(p_.log_path)

    def fleet_summary(self):
        """summary.json's `fleet` (None outside the fleet profile)."""
        if self.args.profile != "fleet":
            return None
        modes = [s.mode for s in self.fleet.specs.values()] if self.fleet is not None else []
        quarter = next((r for r in self.faults if r["kind"] == "sigkill_quarter"), {})
        return {"workers": self.profile["workers"], "route": self.args.fleet_route, "orchestration": "direct",
                "modes": {m: modes.count(m) for m in sorted(set(modes))},
                "listening": sum(1 for m in modes if m != "pooler+poll"),
                "killed": quarter.get("victims", {}), "stranded_steps": quarter.get("stranded_steps", 0),
                "stranded_recovered_s": quarter.get("stranded_recovered_s"),
                "stranded_recovered_each_s": quarter.get("stranded_recovered_each_s", []),
                "recovery_bound_s": self.profile["recovery_bound_s"],
                "claims_per_mode": self.figures.get("claims", {}).get("per_mode"),
                "pgbouncer": None if self.pooler is None else {
                    "pool_mode": self.pooler.pool_mode, "port": self.pooler.port,
                    "default_pool_size": self.pooler.default_pool_size,
                    "log": os.path.join(self.args.work, "pgbouncer.log")}}

    def report(self):
        f = self.figures
        duration = time.time() - self.t0
        kinds = sorted({r["kind"] for r in self.faults})
        fleet = self.fleet_summary()
        with open(os.path.join(self.args.work, "summary.json"), "w") as out:
            json.dump({"profile": self.args.profile, "seed": self.args.seed, "settings": self.profile, "fleet": fleet,
                       "queue_database": self.args.queue_db_url or None,
                       "figures": f, "faults": self.faults, "failures": self.failures, "warnings": self.warnings,
                       "duration_s": round(duration, 1)}, out, indent=2, default=str)
        for path in sorted(self.failing_logs):
            print(f"[chaos] last lines of {path}:\n{tail(path)}", file=sys.stderr)
        for warning in self.warnings:
            print(f"[chaos] warning: {warning}", file=sys.stderr)
        for failure in self.failures:
            print(f"[chaos] FAILED: {failure}", file=sys.stderr)
        verdict = "FAIL" if self.failures else "PASS"
        extra = ""
        if fleet is not None:
            extra = (f"workers={fleet['workers']} route={fleet['route']} listening={fleet['listening']} "
                     f"killed={len(fleet['killed'])} stranded={fleet['stranded_steps']} "
                     f"stranded_recovered={_seconds(fleet['stranded_recovered_s'])} "
                     f"claims={','.join(f'{m}:{n}' for m, n in (fleet['claims_per_mode'] or {}).items()) or '?'} ")
        queues = "own-database" if self.args.queue_db_url else "main-database"
        print(f"[chaos] {verdict} profile={self.args.profile} seed={self.args.seed} queues={queues} "
              f"duration={duration:.0f}s {extra}"
              f"tasks={f.get('tasks_complete', 0)}/{f.get('tasks', 0)} steps={f.get('steps', 0)} "
              f"step_retries={f.get('step_retries', 0)} faults={len(self.faults)} ({len(kinds)} kinds) "
              f"poison={self.poison_sent} notifications={self.notifications_sent} "
              f"bad_requests={self.bad_requests_sent} "
              f"max_recovery={_seconds(f.get('max_recovery_s'))} ({f.get('max_recovery_kind')}) "
              f"quiescent_after={_seconds(f.get('quiescent_after_s'))} failures={len(self.failures)} "
              f"(details: {os.path.join(self.args.work, 'summary.json')})", flush=True)
        return 1 if self.failures else 0


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--profile", choices=sorted(PROFILES), default="short")
    a.add_argument("--seed", type=int, default=1)
    a.add_argument("--db-url", required=True, help="the workers' and orchestration's database (role tasker)")
    a.add_argument("--admin-url", required=True, help="the same database as the bootstrap superuser")
    a.add_argument("--dev-bin", required=True)
    a.add_argument("--repo", required=True)
    a.add_argument("--work", required=True)
    a.add_argument("--pg-bindir", required=True)
    a.add_argument("--pg-data", required=True)
    a.add_argument("--pg-os-user", default="")
    a.add_argument("--pg-port", type=int, default=0, help="PostgreSQL's port (PgBouncer's server)")
    a.add_argument("--psql", default="psql", help="psql, for PgBouncer's admin console")
    a.add_argument("--admin-user", default="postgres", help="the bootstrap superuser (PgBouncer's admin)")
    a.add_argument("--pgbouncer-dir", default="", help="PgBouncer's directory (writable by --pg-os-user)")
    a.add_argument("--fleet-route", choices=["transaction", "direct"], default="transaction",
                   help="fleet profile: workers through PgBouncer in transaction mode (the profile) or "
                        "directly (development, for binaries without pooler mode; PgBouncer runs unused)")
    a.add_argument("--queue-db-url", default="",
                   help="the queues' own database (role tasker), given to every process as PGMQ_DATABASE_URL; "
                        "empty: the queues are in --db-url's database")
    a.add_argument("--queue-admin-url", default="", help="the queue database as the bootstrap superuser")
    args = a.parse_args()
    if bool(args.queue_db_url) != bool(args.queue_admin_url):
        a.error("--queue-db-url and --queue-admin-url go together")
    chaos = Chaos(args)
    chaos.schedule_kinds = chaos.schedule()
    try:
        chaos.run()
    except Exception as error:
        chaos.failures.append(f"the run stopped: {error}")
    sys.exit(chaos.report())


if __name__ == "__main__":
    main()
