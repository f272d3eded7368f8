"""SQL floors with pgbench: our per-step SQL (pgbench/ours.template.sql rendered with the worker's own
statement texts: ours.sql, the worker's default statements, static SQL on the PGMQ tables;
ours_functions.sql, the same through PGMQ's functions) and the
upstream-shaped SQL (pgbench/upstream.sql). Every run is checked afterwards: each step must have
been claimed and completed (a claim or completion that matched nothing would otherwise still
count as a fast transaction)."""
import json
import os
import re
import subprocess
import uuid

from .common import QUEUE, RESULTS_QUEUE, log
from .context import BENCH_DIR
from .server_cpu import ServerCPU

# shape -> (script, pgbench -M). "ours" runs prepared, as the worker (PQprepare once per connection);
# "ours_extended" is the same script with unnamed statements (parsed and planned on every execution).
# "ours" is the worker's default (static statements on the PGMQ tables); "ours_functions" the same step
# through PGMQ's functions (`[worker.pgmq] statements = "functions"`).
SHAPES = {"ours": ("ours", "prepared"), "ours_extended": ("ours", "extended"),
          "ours_functions": ("ours_functions", "prepared"), "upstream": ("upstream", "prepared")}
CLAIM_TIMEOUT_MS = "300000"   # timing.claim_timeout_seconds = 300 (default), as the worker sends it


def prepare(b):
    """Sets `b.floor_vars` (pgbench -D values) and gives their worker a liveness lease for a day: the
    claim statement claims only under the claiming worker's unexpired lease, as the worker keeps it."""
    worker = str(uuid.uuid4())
    b.floor_vars = variables(worker)
    b.q("INSERT INTO tasker.worker_leases (worker_uuid, expires_at, renewed_at, started_at, hostname) "
        "VALUES (%s, clock_timestamp() + interval '1 day', clock_timestamp(), clock_timestamp(), 'bench-floor')", (worker,))


def variables(worker):
    """-D values for the pgbench scripts: the metadata and result JSON the worker writes for a no-op,
    as worker `worker` (the claim's and the result's: a result is stored only over its own claim)."""
    upstream_start_meta = '{"event":"{\\"type\\":\\"Start\\"}","timestamp":"2026-11-23T22:00:00.123456+00:00"}'
    start_meta = upstream_start_meta[:-1] + f',"worker_uuid":"{worker}"}}'  # ClaimStamp adds the worker
    result = json.dumps({
        "step_uuid": str(uuid.uuid4()), "success": True, "result": {}, "status": "completed", "error": None,
        "metadata": {"execution_time_ms": 0, "handler_version": None, "retryable": False,
                     "completed_at": "2026-11-23T22:00:00.123456Z", "worker_id": f"worker_{uuid.uuid4()}", "worker_hostname": "bench",
                     "started_at": "2026-11-23T22:00:00.123400Z", "custom": {}, "error_code": None, "error_type": None,
                     "context": {}},
        "orchestration_metadata": {"headers": {}, "error_context": None, "backoff_hint": None, "custom": {}}},
        separators=(",", ":"))
    done_meta = json.dumps({"event": json.dumps({"type": "EnqueueForOrchestration", "data": json.loads(result)},
                                                separators=(",", ":")),
                            "timestamp": "2026-11-23T22:00:00.123456+00:00", "worker_uuid": worker,
                            "correlation_id": str(uuid.uuid4())}, separators=(",", ":"))
    values = {"start_meta": start_meta, "upstream_start_meta": upstream_start_meta, "done_meta": done_meta, "result": result, "queue": QUEUE,
              "results_queue": RESULTS_QUEUE, "claim_timeout": CLAIM_TIMEOUT_MS, "to_state": "enqueued_for_orchestration"}
    return [arg for k, v in values.items() for arg in ("-D", f"{k}={v}")]


def worker_statements(worker_bin):
    """The step path's statements by name, as the worker prepares them: `tasker-worker statements --json`
    (`WorkerStatementCatalog`), the static ones on the bench's queue tables with PGMQ >= 1.5's layout.
    name -> (sql, parameter names in binding order)."""
    out = subprocess.run([worker_bin, "statements", "--json", "--queue", QUEUE, "--layout", "pgmq-1.5+"],
                         check=True, capture_output=True, text=True).stdout
    return {s["name"]: (s["sql"], s["parameters"]) for s in json.loads(out)["statements"]}


# script -> the statement of `worker_statements` that goes into each placeholder of the template.
SCRIPT_STATEMENTS = {"ours": {"claimSettings": "claim_settings", "hydrate": "hydrate", "claim": "claim.archive_static",
                              "complete": "result.send_static"},
                     "ours_functions": {"claimSettings": "claim_settings", "hydrate": "hydrate", "claim": "claim.archive_function",
                                        "complete": "result.send_function"}}
# placeholder -> the pgbench variable of each parameter, by the parameter's name in the catalog.
PARAMETERS = {"claimSettings": {"statement_timeout_ms": ":claim_timeout"},
              "hydrate": {"step_uuid": ":s_step_uuid", "task_uuid": ":s_task_uuid"},
              "claim": {"step_uuid": ":s_step_uuid", "metadata": ":start_meta", "queue": ":queue", "task_uuid": ":s_task_uuid",
                        "message_id": ":msg_id"},
              "complete": {"step_uuid": ":s_step_uuid", "to_state": ":to_state", "metadata": ":done_meta", "results": ":result",
                           "queue": ":results_queue", "message": ":s_message"}}
TEMPLATE = os.path.join(BENCH_DIR, "pgbench", "ours.template.sql")


def _with_variables(name, sql, parameters, variables):
    """`sql` with each `$k` replaced by the pgbench variable of the k-th parameter's name; fails on a
    parameter without one."""
    def variable(m):
        k = int(m.group(1))
        if not 1 <= k <= len(parameters) or parameters[k - 1] not in variables:
            raise SystemExit(f"bench: statement {name} binds ${k} ({parameters[k - 1] if k <= len(parameters) else '?'}), "
                             f"which benchlib/floor.py's PARAMETERS does not map; update it")
        return variables[parameters[k - 1]]
    return re.sub(r"\$(\d+)\b", variable, sql)


def render_scripts(worker_bin, directory):
    """pgbench/ours.template.sql rendered with the worker's statement texts (`worker_statements`):
    `ours.sql` (the default, static statements on the PGMQ tables) and `ours_functions.sql` (PGMQ's
    functions), written into `directory`. Returns script -> path."""
    statements = worker_statements(worker_bin)
    with open(TEMPLATE) as f:
        template = f.read()
    paths = {}
    for script, slots in SCRIPT_STATEMENTS.items():
        def statement(m):
            slot = m.group(1)
            if slot not in slots:
                raise SystemExit(f"bench: {TEMPLATE} has a placeholder {{{slot}}} that floor.py does not fill")
            name = slots[slot]
            if name not in statements:
                raise SystemExit(f"bench: `tasker-worker statements` has no {name}; update benchlib/floor.py")
            sql, parameters = statements[name]
            return _with_variables(name, sql, parameters, PARAMETERS[slot])
        text = re.sub(r"\{(\w+)\}", statement, template)
        paths[script] = os.path.join(directory, f"{script}.sql")
        with open(paths[script], "w") as f:
            f.write(text)
    return paths


def script_path(b, script):
    """The pgbench script of `script`: ours/ours_functions rendered (once per run) into the run's
    directory, the others as they are in pgbench/."""
    if script not in SCRIPT_STATEMENTS:
        return os.path.join(BENCH_DIR, "pgbench", f"{script}.sql")
    if not hasattr(b, "floor_scripts"):
        b.floor_scripts = render_scripts(b.a.worker_bin, b.work)
    return b.floor_scripts[script]


def verify(b, a, z, label):
    """After a floor run over steps a..z: every step `enqueued_for_orchestration` (4 transitions,
    one `in_progress`), not in process, results stored, attempts = 1, its queue message archived, and
    one result message for it on orchestration_step_results. Fails the run otherwise."""
    (steps, done, in_progress, in_process, no_results, attempts) = b.q("""
        SELECT count(*), count(*) FILTER (WHERE cur.to_state = 'enqueued_for_orchestration'),
               (SELECT count(*) FROM tasker.workflow_step_transitions t
                 WHERE t.workflow_step_uuid IN (SELECT md5('s'||n)::uuid FROM generate_series(%(a)s::bigint, %(z)s::bigint) n)
                   AND t.to_state = 'in_progress'),
               count(*) FILTER (WHERE ws.in_process), count(*) FILTER (WHERE ws.results IS NULL),
               count(*) FILTER (WHERE ws.attempts = 1)
          FROM generate_series(%(a)s::bigint, %(z)s::bigint) n
          JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = md5('s'||n)::uuid
          LEFT JOIN tasker.workflow_step_transitions cur ON cur.workflow_step_uuid = ws.workflow_step_uuid AND cur.most_recent
        """, {"a": a, "z": z})[0]
    left = b.q(f"""SELECT count(*) FROM pgmq.q_{QUEUE} q JOIN bench.floor_map f ON f.msg_id = q.msg_id
                    WHERE f.n BETWEEN %s AND %s""", (a, z))[0][0]
    archived = b.q(f"""SELECT count(*) FROM pgmq.a_{QUEUE} q JOIN bench.floor_map f ON f.msg_id = q.msg_id
                        WHERE f.n BETWEEN %s AND %s""", (a, z))[0][0]
    sent = b.q(f"""SELECT count(DISTINCT r.message->>'step_uuid') FROM pgmq.q_{RESULTS_QUEUE} r
                    WHERE (r.message->>'step_uuid')::uuid IN
                          (SELECT md5('s'||n)::uuid FROM generate_series(%s::bigint, %s::bigint) n)""", (a, z))[0][0]
    n = z - a + 1
    checks = {"steps": steps, "enqueued_for_orchestration": done, "in_progress_transitions": in_progress,
              "not_in_process": steps - in_process, "with_results": steps - no_results, "attempts_1": attempts,
              "messages_archived": archived, "result_messages": sent}
    bad = {k: v for k, v in checks.items() if v != n}
    if left or bad:
        raise SystemExit(f"bench: floor {label} did not claim and complete every step ({n} expected): "
                         f"{bad}, {left} queue messages left")
    return checks


def floor_one(b, shape, c):
    """pgbench -t: every client runs `per_client` steps, each on its own freshly enqueued step;
    then `verify`."""
    script, mode = SHAPES[shape]
    per_client = max(1, b.cfg["floor_steps"][c] // c)
    a, z = b.seed(per_client * c, enqueued=True)
    offset = b.msg_offset(a, z)
    b.purge_results()
    b.q("CHECKPOINT")
    cmd = [b.a.pgbench, "-n", "-r", "-M", mode, "-c", str(c), "-j", str(min(c, 2)), "-t", str(per_client),
           "-f", script_path(b, script),
           "-D", "i=-1", "-D", f"base={a}", "-D", f"per_client={per_client}", "-D", f"msg_offset={offset}"]
    cmd += b.floor_vars + [b.a.db_url]
    cpu = ServerCPU(b)
    before = cpu.snapshot()
    p = subprocess.run(cmd, capture_output=True, text=True)
    after = cpu.snapshot()
    m = re.search(r"tps = ([\d.]+)", p.stdout)
    failed = re.search(r"number of failed transactions: (\d+)", p.stdout)
    if p.returncode != 0 or not m or (failed and int(failed.group(1)) > 0):
        raise SystemExit(f"pgbench {shape} c={c} failed:\n{p.stdout}\n{p.stderr}")
    lat = re.search(r"latency average = ([\d.]+) ms", p.stdout)
    checks = verify(b, a, z, f"{shape} c={c}")
    # -r: per-command latency (a pipeline's statements show ~0; its round trip is on \endpipeline).
    per_command = [[float(ms), " ".join(text.split())[:60]] for ms, text in
                   re.findall(r"^\s+([\d.]+)\s+\d+\s+(\S.*)$", p.stdout.split("statement latencies", 1)[-1], re.M)]
    r = {"steps_per_s": float(m.group(1)), "latency_ms": float(lat.group(1)) if lat else None,
         "steps": per_client * c, "pgbench_mode": mode, "verified": checks, "command_latency_ms": per_command,
         "server_cpu_ms_per_step": ServerCPU.per_step(before, after, per_client * c)["server_cpu_ms_per_step"]}
    if script.startswith("ours") and per_command:
        # The uuid SELECT before the pipeline is the floor's only statement the worker does not run.
        r["extra_select_ms"] = next((ms for ms, text in per_command if text.startswith("SELECT md5(")), None)
    return r


def run_floors(b, key, c):
    """The floors at one (durability, c). `ours_prepared` is kept as an alias of `ours`
    (both -M prepared now) for readers of older results."""
    R = b.results.setdefault("floor", {})
    for shape in SHAPES:
        r = R.setdefault(shape, {}).setdefault(key, {})[str(c)] = floor_one(b, shape, c)
        log(f"floor {shape:13} {key:7} c={c:2}: {r['steps_per_s']:8.1f} steps/s (-M {r['pgbench_mode']}, verified)")
    R.setdefault("ours_prepared", {}).setdefault(key, {})[str(c)] = R["ours"][key][str(c)]


def _paths(v, prefix=""):
    """Key paths of a JSON object (a string holding a JSON object, e.g. `event`, is parsed)."""
    if isinstance(v, str) and v.startswith("{"):
        try:
            v = json.loads(v)
        except ValueError:
            return set()
    if not isinstance(v, dict):
        return set()
    out = set()
    for k, x in v.items():
        out |= {prefix + k} | _paths(x, prefix + k + ".")
    return out


def payload_check(b, a, z):
    """What the worker wrote for one no-op step of a drain (steps a..z) against the values the floor
    sends: key paths and sizes of results, the `in_progress` and result transitions' metadata, and
    the result message. A difference is reported (results JSON, log), it does not fail the run."""
    rows = b.q(f"""
        SELECT ws.results, s.metadata, d.metadata,
               (SELECT r.message FROM pgmq.q_{RESULTS_QUEUE} r WHERE (r.message->>'step_uuid')::uuid = ws.workflow_step_uuid LIMIT 1)
          FROM generate_series(%s::bigint, %s::bigint) n
          JOIN tasker.workflow_steps ws ON ws.workflow_step_uuid = md5('s'||n)::uuid
          JOIN tasker.workflow_step_transitions s ON s.workflow_step_uuid = ws.workflow_step_uuid AND s.to_state = 'in_progress'
          JOIN tasker.workflow_step_transitions d ON d.workflow_step_uuid = ws.workflow_step_uuid
                                                 AND d.to_state = 'enqueued_for_orchestration'
         LIMIT 1""", (a, z))
    if not rows:
        return None
    fv = dict(arg.split("=", 1) for arg in b.floor_vars[1::2])
    ours = {"results": json.loads(fv["result"]), "start_metadata": json.loads(fv["start_meta"]),
            "done_metadata": json.loads(fv["done_meta"]),
            "message": {k: str(uuid.UUID(int=0)) for k in ("task_uuid", "step_uuid", "correlation_id")}}
    theirs = dict(zip(ours, rows[0]))
    out = {}
    for k in ours:
        mine, real = _paths(ours[k]), _paths(theirs[k])
        out[k] = {"floor_bytes": len(json.dumps(ours[k], separators=(",", ":"))),
                  "worker_bytes": len(json.dumps(theirs[k], separators=(",", ":"))),
                  "only_in_floor": sorted(mine - real), "only_in_worker": sorted(real - mine)}
        if mine != real:
            log(f"WARNING: floor {k} differs from the worker's: only in floor {sorted(mine - real)}, "
                f"only in worker {sorted(real - mine)}")
    return out
