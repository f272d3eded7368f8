"""A real PgBouncer (Debian's `pgbouncer`) in front of a private PostgreSQL, for the tooling that runs
fleets of workers (`scripts/bench --phases fleet`, `scripts/chaos --fleet`).

Transaction mode by default (every transaction of a client may run in another server session). It
listens on TCP at `port` on 127.0.0.1 (and on a Unix socket in its directory), trusts the admin user
and `users` (default the clusters' role, `tasker`: `auth_type = trust` still refuses a user missing from
the auth file), and exposes its admin console (database `pgbouncer`) to the PostgreSQL superuser, so
`server_sessions()` can read `SHOW POOLS`. `restart()` kills it and starts it again on the same port
(what an operator's restart does to the clients: every connection through it breaks).

PgBouncer refuses to run as root: give `os_user` (the clusters' OS user, as `scripts/lib/common.sh`'s
`_pg_os_user`) and it drops to that user, who must be able to write `directory`.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from typing import Optional

BINARY = "/usr/sbin/pgbouncer"


class PgBouncerError(RuntimeError):
    pass


class PgBouncer:
    def __init__(
        self,
        directory: str,
        *,
        server_host: str,
        server_port: int,
        port: int,
        admin_user: str = "postgres",
        users: tuple[str, ...] = ("tasker",),
        pool_mode: str = "transaction",
        default_pool_size: int = 20,
        max_client_conn: int = 2000,
        os_user: Optional[str] = None,
        binary: str = BINARY,
    ) -> None:
        self.directory = os.path.abspath(directory)
        self.server_host = server_host
        self.server_port = server_port
        self.port = port
        self.admin_user = admin_user
        self.users = tuple(users)
        self.pool_mode = pool_mode
        self.default_pool_size = default_pool_size
        self.max_client_conn = max_client_conn
        self.os_user = os_user
        self.binary = binary
        self.process: Optional[subprocess.Popen] = None

    # -- configuration -----------------------------------------------------------------------
    @property
    def ini_path(self) -> str:
        return os.path.join(self.directory, "pgbouncer.ini")

    @property
    def log_path(self) -> str:
        return os.path.join(self.directory, "pgbouncer.log")

    def url(self, database: str, user: str, password: Optional[str] = None) -> str:
        """The URL a client uses to reach `database` through the pooler (TCP)."""
        credentials = user if password is None else f"{user}:{password}"
        return f"postgresql://{credentials}@127.0.0.1:{self.port}/{database}"

    def _write_configuration(self) -> None:
        os.makedirs(self.directory, exist_ok=True)
        with open(os.path.join(self.directory, "users.txt"), "w") as f:
            for user in dict.fromkeys((self.admin_user,) + self.users):   # trust: every user must be listed
                f.write(f'"{user}" ""\n')
        # `options` and `extra_float_digits` are startup parameters libpq clients send; the worker
        # sends no `options` when configured for a transaction pooler, but other clients may.
        ini = f"""[databases]
* = host={self.server_host} port={self.server_port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {self.port}
unix_socket_dir = {self.directory}
auth_type = trust
auth_file = {os.path.join(self.directory, "users.txt")}
admin_users = {self.admin_user}
stats_users = {self.admin_user}
pool_mode = {self.pool_mode}
default_pool_size = {self.default_pool_size}
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = {self.max_client_conn}
max_db_connections = 0
ignore_startup_parameters = extra_float_digits,options
server_reset_query =
server_check_delay = 1
# PgBouncer's default is 15 s: after a PostgreSQL restart every client waited that long (chaos --fleet
# saw 12-16 s of stalled claims against 0.6 s connected directly). docs/capacity.md recommends 1.
server_login_retry = 1
logfile = {self.log_path}
pidfile = {os.path.join(self.directory, "pgbouncer.pid")}
"""
        with open(self.ini_path, "w") as f:
            f.write(ini)
        if self.os_user:
            entry = pwd.getpwnam(self.os_user)
            for root, dirs, files in os.walk(self.directory):
                for name in [root] + [os.path.join(root, n) for n in dirs + files]:
                    os.chown(name, entry.pw_uid, entry.pw_gid)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self, timeout: float = 30.0) -> None:
        if not os.access(self.binary, os.X_OK):
            raise PgBouncerError(f"{self.binary} is missing: apt-get install pgbouncer")
        self._write_configuration()
        command = [self.binary]
        if self.os_user:
            command += ["-u", self.os_user]
        command.append(self.ini_path)
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise PgBouncerError(f"PgBouncer exited with {self.process.returncode}: {self.log_tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise PgBouncerError(f"PgBouncer did not listen on port {self.port} within {timeout} s: {self.log_tail()}")

    def stop(self, timeout: float = 10.0) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        # SIGTERM is PgBouncer 1.18's immediate shutdown (SHUTDOWN); SIGINT would be its safe one
        # (PAUSE + SHUTDOWN: waits until every server connection is released).
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def restart(self) -> None:
        """Kills PgBouncer (SIGKILL: every client and server connection through it breaks at once)
        and starts it again on the same port."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()
        self.start()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, size: int = 2000) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - size))
                return f.read().decode(errors="replace")
        except OSError:
            return "(no log)"

    # -- figures -----------------------------------------------------------------------------
    def show(self, what: str, psql: str) -> list[dict[str, str]]:
        """Rows of the admin console's `SHOW <what>` (POOLS, SERVERS, CLIENTS, STATS), read with `psql`."""
        if what.upper() not in {"POOLS", "SERVERS", "CLIENTS", "STATS", "DATABASES"}:
            raise ValueError(what)
        done = subprocess.run(
            [psql, "-X", "-A", "-F", "\t", "-P", "footer=off", "-h", "127.0.0.1", "-p", str(self.port),
             "-U", self.admin_user, "-d", "pgbouncer", "-c", f"SHOW {what.upper()}"],
            capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            raise PgBouncerError(f"SHOW {what} failed: {done.stderr.strip()}")
        lines = [line for line in done.stdout.splitlines() if line]
        if not lines:
            return []
        header = lines[0].split("\t")
        return [dict(zip(header, line.split("\t"))) for line in lines[1:]]

    def server_sessions(self, psql: str, database: Optional[str] = None) -> int:
        """Server sessions PgBouncer holds now (active + idle + used + tested + login), for one
        database or all but its own console."""
        total = 0
        for row in self.show("POOLS", psql):
            if row.get("database") == "pgbouncer" or (database and row.get("database") != database):
                continue
            for key in ("sv_active", "sv_idle", "sv_used", "sv_tested", "sv_login"):
                total += int(row.get(key) or 0)
        return total


def remove_directory(directory: str) -> None:
    shutil.rmtree(directory, ignore_errors=True)
