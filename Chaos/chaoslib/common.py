"""Logging and database access that outlives the faults (reconnects; bounded retries)."""
import sys
import threading
import time

import psycopg

T0 = time.time()


def log(message):
    print(f"[chaos] {time.time() - T0:7.1f}s {message}", file=sys.stderr, flush=True)


class Database:
    """One autocommit connection per thread, as the bootstrap superuser (the faults terminate the
    role tasker's backends only). A call that fails on a connection loss reconnects and is retried
    until `deadline` seconds have passed; other errors are raised at once."""

    def __init__(self, url):
        self.url = url
        self._local = threading.local()

    def _connection(self):
        c = getattr(self._local, "c", None)
        if c is None or c.closed:
            c = psycopg.connect(self.url, autocommit=True, connect_timeout=3)
            self._local.c = c
        return c

    def _drop(self):
        c = getattr(self._local, "c", None)
        self._local.c = None
        if c is not None:
            try:
                c.close()
            except Exception:
                pass

    def q(self, sql, params=None, deadline=60.0, fetch=True):
        """Rows of `sql` (a list of tuples; [] when `fetch` is false)."""
        end = time.time() + deadline
        while True:
            try:
                with self._connection().cursor() as cur:
                    cur.execute(sql, params)
                    return cur.fetchall() if fetch and cur.description else []
            except (psycopg.OperationalError, psycopg.InterfaceError) as error:
                self._drop()
                if time.time() >= end:
                    raise RuntimeError(f"database unreachable for {deadline:.0f} s: {error}") from error
                time.sleep(0.2)

    def one(self, sql, params=None, deadline=60.0):
        rows = self.q(sql, params, deadline)
        return rows[0][0] if rows else None

    def try_q(self, sql, params=None):
        """One attempt; (rows, None) or (None, error) — for hostile inputs the server may refuse."""
        try:
            with self._connection().cursor() as cur:
                cur.execute(sql, params)
                return (cur.fetchall() if cur.description else []), None
        except psycopg.Error as error:
            if isinstance(error, (psycopg.OperationalError, psycopg.InterfaceError)):
                self._drop()
            return None, error


def tail(path, lines=40):
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 64 * 1024))
            return b"\n".join(f.read().splitlines()[-lines:]).decode("utf-8", "replace")
    except OSError as error:
        return f"(cannot read {path}: {error})"
