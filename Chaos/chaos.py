#!/usr/bin/env python3
"""The chaos driver behind scripts/chaos (issue #14). Run it through scripts/chaos, which installs
what is missing, finds or builds the debug binaries, starts and migrates a throw-away PostgreSQL.

Phases: start the fleet (two workers, the orchestration) → steady load → the faults in a seeded
order, `gap` seconds apart → stop the load → wait (bounded) for quiescence → judge → figures →
one summary line. Modules: chaoslib/processes (fleet), load, faults, poison (hostile inputs), judge,
figures (recovery times)."""
import argparse
import json
import os
import random
import shutil
import sys
import time

sys.dont_write_bytecode = True   # no __pycache__ in the repository
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from chaoslib import faults, figures, judge  # noqa: E402
from chaoslib.common import Database, log, tail  # noqa: E402
from chaoslib.load import Load  # noqa: E402
from chaoslib.processes import Fleet  # noqa: E402

# rate: tasks per second; repeat: each fault kind this many times; gap: seconds between faults;
# warmup: load before the first fault; settle: load after the last; quiescence: the bound on the wait;
# claims_at_signal: a worker is signalled once it holds this many steps in_progress (waited for ≤ 15 s).
PROFILES = {
    "short": {"rate": 4, "repeat": 1, "gap": 10, "warmup": 8, "settle": 8, "quiescence": 90,
              "claims_at_signal": 2, "poison_per_queue": 100, "notifications": 60, "bad_requests": 36},
    "full": {"rate": 8, "repeat": 3, "gap": 14, "warmup": 10, "settle": 15, "quiescence": 180,
             "claims_at_signal": 4, "poison_per_queue": 300, "notifications": 200, "bad_requests": 120},
}


def _seconds(value):
    return "never" if value is None else f"{value}s"


class Chaos:
    def __init__(self, args):
        self.args = args
        self.profile = PROFILES[args.profile]
        self.rng = random.Random(args.seed)
        self.db = Database(args.admin_url)
        self.failures, self.faults, self.figures = [], [], {}
        self.failing_logs = set()
        self.warnings = []
        self.poison_sent = self.notifications_sent = self.bad_requests_sent = 0
        self.t0 = time.time()

    def templates(self):
        """config/tasks/examples plus Chaos/templates in one directory (TASKER_TEMPLATE_PATH)."""
        target = os.path.join(self.args.work, "templates")
        shutil.copytree(os.path.join(self.args.repo, "config", "tasks", "examples"), os.path.join(target, "examples"))
        shutil.copytree(os.path.join(self.args.repo, "Chaos", "templates"), os.path.join(target, "chaos"))
        return target

    def schedule(self):
        kinds = faults.KINDS * self.profile["repeat"]
        self.rng.shuffle(kinds)
        return kinds

    def run(self):
        p = self.profile
        self.fleet = Fleet(self.args, self.args.work, self.templates())
        self.load = Load(self.db, self.rng, p["rate"], f"s{self.args.seed}")
        try:
            self.fleet.start_all()
            self.fleet.watch()
            self.load.start()
            log(f"load: {p['rate']} tasks/s; faults: {', '.join(self.schedule_kinds)}")
            time.sleep(p["warmup"])
            for kind in self.schedule_kinds:
                started = time.time()
                self.faults.append(faults.inject(self, kind))
                time.sleep(max(0.0, p["gap"] - (time.time() - started)))
            time.sleep(p["settle"])
            self.load.stop()
            log(f"load stopped: {len(self.load.submitted)} tasks submitted ({self.load.resent} sends repeated)")
            waited = judge.wait_for_quiescence(self, p["quiescence"])
            self.figures["quiescent_after_s"] = None if waited is None else round(waited, 1)
            self.failures.extend(self.fleet.failures)
            judge.judge(self)
            self.figures["max_recovery_s"], self.figures["max_recovery_kind"] = figures.recovery(self)
        finally:
            self.fleet.stop_all()
        for p_ in self.fleet.processes.values():
            for at, status, sig in p_.exit_statuses[-1:]:
                if sig == "SIGTERM" and status != 0:
                    self.failures.append(f"{p_.name} exited with status {status} at the final SIGTERM")
                    self.failing_logs.add(p_.log_path)

    def report(self):
        f = self.figures
        duration = time.time() - self.t0
        kinds = sorted({r["kind"] for r in self.faults})
        with open(os.path.join(self.args.work, "summary.json"), "w") as out:
            json.dump({"profile": self.args.profile, "seed": self.args.seed, "settings": self.profile,
                       "figures": f, "faults": self.faults, "failures": self.failures, "warnings": self.warnings,
                       "duration_s": round(duration, 1)}, out, indent=2, default=str)
        for path in sorted(self.failing_logs):
            print(f"[chaos] last lines of {path}:\n{tail(path)}", file=sys.stderr)
        for warning in self.warnings:
            print(f"[chaos] warning: {warning}", file=sys.stderr)
        for failure in self.failures:
            print(f"[chaos] FAILED: {failure}", file=sys.stderr)
        verdict = "FAIL" if self.failures else "PASS"
        print(f"[chaos] {verdict} profile={self.args.profile} seed={self.args.seed} duration={duration:.0f}s "
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
    chaos = Chaos(a.parse_args())
    chaos.schedule_kinds = chaos.schedule()
    try:
        chaos.run()
    except Exception as error:
        chaos.failures.append(f"the run stopped: {error}")
    sys.exit(chaos.report())


if __name__ == "__main__":
    main()
