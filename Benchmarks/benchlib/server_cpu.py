"""Server CPU per step: the PostgreSQL server's processes' CPU time (utime + stime from
/proc/<pid>/stat) over a drain, so that each lever on the worker's SQL can be judged by what it
asks of the server, not by throughput alone (which the shared machine's load moves)."""
import os

TICKS = os.sysconf("SC_CLK_TCK")


def _stat(pid):
    """(ppid, utime + stime, cutime + cstime) in clock ticks, or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()   # after the command name, which may hold spaces
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return int(rest[1]), int(rest[11]) + int(rest[12]), int(rest[13]) + int(rest[14])


def process_ticks(pid):
    """utime + stime of process `pid` (all its threads) in clock ticks; 0 when it is gone."""
    s = _stat(pid)
    return s[1] if s else 0


def worker_per_step(before, after, steps):
    """`worker_cpu_ms_per_step`: the worker process's own CPU (utime + stime) per step."""
    return {"worker_cpu_ms_per_step": round((after - before) * 1000.0 / TICKS / max(1, steps), 3)}


class ServerCPU:
    """Snapshots of the server's CPU: the postmaster's own time plus its reaped children's
    (cutime/cstime: backends that ended between snapshots still count), plus every live child's.
    `bench_pid` is the backend of the bench's own connection (the enqueueing), reported apart."""

    def __init__(self, b):
        data_dir = b.q("SHOW data_directory")[0][0]
        with open(os.path.join(data_dir, "postmaster.pid")) as f:
            self.postmaster = int(f.readline())
        self.bench_pid = b.q("SELECT pg_backend_pid()")[0][0]

    def snapshot(self):
        """{"total": ticks of every server process so far, "bench": ticks of the bench's backend}."""
        own = _stat(self.postmaster)
        total = (own[1] + own[2]) if own else 0
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                s = _stat(int(entry))
                if s and s[0] == self.postmaster:
                    total += s[1]
        bench = _stat(self.bench_pid)
        return {"total": total, "bench": bench[1] if bench else 0}

    @staticmethod
    def per_step(before, after, steps):
        """ms of server CPU per step: `server_cpu_ms_per_step` (every server process except the
        bench's enqueueing backend: the worker's backends, WAL writer, checkpointer, autovacuum)
        and `enqueue_cpu_ms_per_step` (the bench's backend: marking and sending the steps)."""
        ms = 1000.0 / TICKS
        bench = (after["bench"] - before["bench"]) * ms
        total = (after["total"] - before["total"]) * ms
        return {"server_cpu_ms_per_step": round((total - bench) / max(1, steps), 3),
                "enqueue_cpu_ms_per_step": round(bench / max(1, steps), 3)}
