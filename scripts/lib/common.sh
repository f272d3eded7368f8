# shellcheck shell=bash
#
# Shared helpers for the developer scripts (scripts/dev, scripts/test) and CI.
# Source this file; it defines functions and a few variables, nothing runs.
#
#   ensure_system_packages   install PostgreSQL + libpq-dev (apt) when missing
#   ensure_pgmq_venv         install pgmq==1.1.4 into .tasker/venv, print pgmq.sql path
#   prepare_environment      cd to the repo, SWIFT_DETERMINISTIC_HASHING=1, the two above
#                            (exports TASKER_PGMQ_SQL)
#   pg_bindir                print the PostgreSQL server binary directory
#   as_pg_user CMD...        run CMD as the OS user that owns the clusters
#   start_cluster AREA [SETTING=VALUE...]
#                            initdb (first time) + start a private cluster under AREA,
#                            create role "tasker"; exports PGHOST, PGPORT, TASKER_PG_URL
#   stop_cluster AREA        fast shutdown of the cluster under AREA (no-op if stopped)
#   ensure_database NAME     create database NAME (owner tasker) if it does not exist
#   database_url NAME        print postgresql://tasker@127.0.0.1:$PGPORT/NAME
#   log / warn / die         "[tasker] ..." messages on stderr
#
# Cluster area layout (AREA is the directory passed to start_cluster):
#   AREA/data/          PGDATA
#   AREA/socket/        unix socket directory
#   AREA/postgres.log   server log
#   AREA/port           last port used (reused when still free)

if [[ -n "${TASKER_COMMON_SH_LOADED:-}" ]]; then
    return 0
fi
TASKER_COMMON_SH_LOADED=1

TASKER_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TASKER_STATE_DIR="${TASKER_ROOT}/.tasker"
TASKER_PGMQ_VERSION="1.1.4"
TASKER_PG_SUPERUSER="postgres"   # bootstrap superuser created by initdb
TASKER_PG_ROLE="tasker"          # role the worker and the tests connect as
TASKER_PG_OS_USER_FALLBACK="tasker-pg"

# Never fail: stderr may be a pipe whose reader is gone (`scripts/dev 2>&1 | tee dev.log`, then
# Ctrl-C kills tee too), and a script must still get through its cleanup.
log()  { printf '[tasker] %s\n' "$*" >&2 2>/dev/null || true; }
warn() { printf '[tasker] warning: %s\n' "$*" >&2 2>/dev/null || true; }
die()  { printf '[tasker] error: %s\n' "$*" >&2 2>/dev/null || true; exit 1; }

# --------------------------------------------------------------------------
# System packages
# --------------------------------------------------------------------------

_TASKER_APT_UPDATED=""

# _apt_install PKG... : non-interactive apt-get install (apt-get update once per run).
_apt_install() {
    local -a sudo=()
    if [[ "${EUID}" -ne 0 ]]; then
        command -v sudo >/dev/null 2>&1 || die "need root (or sudo) to install: $*"
        sudo=(sudo -n)
    fi
    command -v apt-get >/dev/null 2>&1 || die "apt-get not found; please install: $*"
    if [[ -z "${_TASKER_APT_UPDATED}" ]]; then
        log "apt-get update"
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null >&2 \
            || die "apt-get update failed"
        _TASKER_APT_UPDATED=1
    fi
    log "apt-get install $*"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$@" </dev/null >&2 \
        || die "apt-get install $* failed"
}

# pg_bindir: directory holding initdb/pg_ctl/postgres. Prefers `pg_config --bindir`
# when it really contains the server binaries, else the newest /usr/lib/postgresql/N/bin.
pg_bindir() {
    local dir
    if command -v pg_config >/dev/null 2>&1; then
        dir="$(pg_config --bindir 2>/dev/null || true)"
        if [[ -n "${dir}" && -x "${dir}/initdb" && -x "${dir}/pg_ctl" ]]; then
            printf '%s\n' "${dir}"
            return 0
        fi
    fi
    dir="$(find /usr/lib/postgresql -mindepth 3 -maxdepth 3 -path '*/bin/initdb' -printf '%h\n' 2>/dev/null \
        | sort -V | tail -n 1)"
    if [[ -n "${dir}" && -x "${dir}/pg_ctl" ]]; then
        printf '%s\n' "${dir}"
        return 0
    fi
    return 1
}

_have_libpq_dev() {
    local inc
    if command -v pg_config >/dev/null 2>&1; then
        inc="$(pg_config --includedir 2>/dev/null || true)"
        [[ -n "${inc}" && -f "${inc}/libpq-fe.h" ]] && return 0
    fi
    [[ -f /usr/include/postgresql/libpq-fe.h ]]
}

# ensure_system_packages: PostgreSQL server + client and libpq headers.
ensure_system_packages() {
    local -a missing=()
    pg_bindir >/dev/null || missing+=(postgresql)
    _have_libpq_dev || missing+=(libpq-dev)
    if ((${#missing[@]} > 0)); then
        _apt_install "${missing[@]}"
        pg_bindir >/dev/null || die "PostgreSQL server binaries still not found after install"
        _have_libpq_dev || die "libpq-fe.h still not found after installing libpq-dev"
    fi
    log "PostgreSQL binaries: $(pg_bindir)"
}

# --------------------------------------------------------------------------
# PGMQ SQL (from the pgmq PyPI package, in a private venv)
# --------------------------------------------------------------------------

# _pgmq_sql_path PYTHON: print pgmq/sql/pgmq.sql of the installed package (no import of
# the package itself, so its runtime dependencies do not matter here).
_pgmq_sql_path() {
    "$1" - <<'PY' 2>/dev/null
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("pgmq")
path = pathlib.Path(spec.origin).parent / "sql" / "pgmq.sql"
if not path.is_file():
    sys.exit(1)
print(path)
PY
}

_pgmq_venv_ok() {
    local py="$1/bin/python"
    [[ -x "${py}" ]] || return 1
    [[ "$("${py}" -c 'import importlib.metadata as m; print(m.version("pgmq"))' 2>/dev/null)" \
        == "${TASKER_PGMQ_VERSION}" ]] || return 1
    _pgmq_sql_path "${py}" >/dev/null
}

# _make_venv DIR: python3 -m venv, falling back to Debian's python3 + python3-venv.
_make_venv() {
    local venv="$1" py
    py="$(command -v python3 || true)"
    if [[ -n "${py}" ]] && "${py}" -m venv "${venv}" >/dev/null 2>&1; then
        return 0
    fi
    rm -rf "${venv}"
    warn "'python3 -m venv' failed (${py:-no python3}); installing Debian's python3-venv"
    _apt_install python3 python3-venv
    /usr/bin/python3 -m venv "${venv}" >&2 || die "could not create venv ${venv}"
}

# ensure_pgmq_venv: make sure .tasker/venv has pgmq==1.1.4; print the absolute pgmq.sql path.
ensure_pgmq_venv() {
    local venv="${TASKER_STATE_DIR}/venv"
    if ! _pgmq_venv_ok "${venv}"; then
        log "installing pgmq==${TASKER_PGMQ_VERSION} into ${venv}"
        mkdir -p "${TASKER_STATE_DIR}"
        # A venv whose interpreter no longer runs (e.g. its python was removed) is rebuilt.
        "${venv}/bin/python" -c '' 2>/dev/null || { rm -rf "${venv}"; _make_venv "${venv}"; }
        PIP_DISABLE_PIP_VERSION_CHECK=1 "${venv}/bin/python" -m pip install -q \
            "pgmq==${TASKER_PGMQ_VERSION}" </dev/null >&2 \
            || die "pip install pgmq==${TASKER_PGMQ_VERSION} failed"
        _pgmq_venv_ok "${venv}" || die "pgmq.sql not found in ${venv} after install"
    fi
    _pgmq_sql_path "${venv}/bin/python"
}

# prepare_environment: common start of scripts/dev and scripts/test — cd to the repo
# root, deterministic Swift builds, system packages, and TASKER_PGMQ_SQL (exported).
prepare_environment() {
    cd "${TASKER_ROOT}" || die "cannot cd to ${TASKER_ROOT}"
    export SWIFT_DETERMINISTIC_HASHING=1
    ensure_system_packages
    TASKER_PGMQ_SQL="$(ensure_pgmq_venv)" || die "could not provide pgmq.sql"
    export TASKER_PGMQ_SQL
    log "pgmq.sql: ${TASKER_PGMQ_SQL}"
}

# --------------------------------------------------------------------------
# Private PostgreSQL clusters
# --------------------------------------------------------------------------

# _pg_os_user: the OS user that runs initdb/pg_ctl/postgres. Ourselves unless root
# (initdb refuses root): then the Debian "postgres" user, or a dedicated system user.
_pg_os_user() {
    if [[ "${EUID}" -ne 0 ]]; then
        id -un
    elif id -u "${TASKER_PG_SUPERUSER}" >/dev/null 2>&1; then
        printf '%s\n' "${TASKER_PG_SUPERUSER}"
    else
        if ! id -u "${TASKER_PG_OS_USER_FALLBACK}" >/dev/null 2>&1; then
            log "creating system user ${TASKER_PG_OS_USER_FALLBACK}"
            useradd --system --no-create-home --home-dir / --shell /usr/sbin/nologin \
                "${TASKER_PG_OS_USER_FALLBACK}" || die "useradd failed"
        fi
        printf '%s\n' "${TASKER_PG_OS_USER_FALLBACK}"
    fi
}

# as_pg_user CMD...: run CMD as the cluster owner (from /, whose cwd is always readable).
as_pg_user() {
    local user
    user="$(_pg_os_user)"
    if [[ "${EUID}" -eq 0 ]]; then
        (cd / && runuser -u "${user}" -- "$@")
    else
        (cd / && "$@")
    fi
}

# _free_port [PREFERRED]: PREFERRED if it can be bound on 127.0.0.1, else a kernel-chosen one.
_free_port() {
    local py
    py="$(command -v python3 || true)"
    [[ -n "${py}" ]] || py=/usr/bin/python3
    "${py}" - "${1:-0}" <<'PY'
import socket, sys
def try_bind(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # Like the postmaster itself: a port left in TIME_WAIT by our last run is reusable.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port))
        return s.getsockname()[1]
    except OSError:
        return None
    finally:
        s.close()
pref = int(sys.argv[1])
print((pref and try_bind(pref)) or try_bind(0))
PY
}

# _running_postmaster_port DATADIR: if a postmaster really serving DATADIR is alive,
# print its port and succeed. A stale postmaster.pid (crash, reused PID) is removed.
_running_postmaster_port() {
    local data="$1" pidfile="$1/postmaster.pid" pid port cwd real
    [[ -f "${pidfile}" ]] || return 1
    pid="$(sed -n 1p "${pidfile}" 2>/dev/null | tr -dc '0-9')"
    port="$(sed -n 4p "${pidfile}" 2>/dev/null | tr -dc '0-9')"
    real="$(cd "${data}" && pwd -P)"
    if [[ -n "${pid}" ]] && kill -0 "${pid}" 2>/dev/null; then
        cwd="$(readlink "/proc/${pid}/cwd" 2>/dev/null || true)"
        if [[ "${cwd}" == "${real}" && -n "${port}" ]]; then
            printf '%s\n' "${port}"
            return 0
        fi
    fi
    warn "removing stale ${pidfile} (pid ${pid:-?} is not a postmaster for this cluster)"
    rm -f "${pidfile}"
    return 1
}

# _check_traversable DIR: the cluster owner must reach DIR through every parent.
_check_traversable() {
    local dir="$1" user
    user="$(_pg_os_user)"
    if ! as_pg_user test -w "${dir}" -a -x "${dir}"; then
        local p="${dir}"
        while [[ "${p}" != "/" ]]; do
            p="$(dirname "${p}")"
            as_pg_user test -x "${p}" || die "OS user '${user}' cannot traverse ${p}; run: chmod o+x ${p}"
        done
        die "OS user '${user}' cannot write ${dir}"
    fi
}

_psql_admin() {
    "$(pg_bindir)/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "${PGPORT}" \
        -U "${TASKER_PG_SUPERUSER}" -d postgres "$@" </dev/null
}

# start_cluster AREA [NAME=VALUE...]: start (initialising on first use) a cluster in AREA.
# Extra NAME=VALUE pairs are passed to the server as -c settings for this start only.
# Exports PGHOST=127.0.0.1, PGPORT and TASKER_PG_URL (tasker role, database "postgres").
start_cluster() {
    local area="${1:?start_cluster needs a directory}"
    shift
    local bindir user data sock logfile port setting opts ready=""
    bindir="$(pg_bindir)" || die "PostgreSQL server binaries not found (run ensure_system_packages)"
    user="$(_pg_os_user)"
    mkdir -p "${area}"
    area="$(cd "${area}" && pwd -P)"
    data="${area}/data"
    sock="${area}/socket"
    logfile="${area}/postgres.log"

    # Own the area (not recursively into someone else's tree: just what we manage).
    if [[ "${EUID}" -eq 0 ]]; then
        chown "${user}:" "${area}"
        mkdir -p "${sock}"
        chown "${user}:" "${sock}"
        [[ -e "${logfile}" ]] && chown "${user}:" "${logfile}"
        [[ -d "${data}" ]] && chown -R "${user}:" "${data}"
    else
        mkdir -p "${sock}"
    fi
    chmod 700 "${area}" "${sock}" 2>/dev/null || true
    _check_traversable "${area}"
    # unix socket paths are limited to 107 bytes.
    if (( ${#sock} + 20 > 107 )); then
        die "socket directory path too long for a unix socket: ${sock} (use a shorter directory)"
    fi

    if [[ ! -f "${data}/PG_VERSION" ]]; then
        log "initialising cluster in ${data}"
        rm -rf "${data}"
        as_pg_user "${bindir}/initdb" -D "${data}" --auth=trust --username="${TASKER_PG_SUPERUSER}" \
            --encoding=UTF8 --locale=C --no-sync >"${area}/initdb.log" 2>&1 \
            || { cat "${area}/initdb.log" >&2; die "initdb failed"; }
        cat >>"${data}/postgresql.conf" <<EOF

# --- added by scripts/lib/common.sh (private dev/test cluster) ---
listen_addresses = '127.0.0.1'
unix_socket_directories = '${sock}'
max_connections = 600   # the test suite runs many tests (each with a worker pool) at once: ~300 at peak
EOF
    fi

    if port="$(_running_postmaster_port "${data}")"; then
        log "cluster in ${data} already running on port ${port}"
    else
        port="$(_free_port "$(cat "${area}/port" 2>/dev/null || echo 0)")"
        [[ -n "${port}" ]] || die "could not find a free TCP port"
        printf '%s\n' "${port}" >"${area}/port"
        # Stale socket/lock files from a crash would otherwise make the start fail.
        rm -f "${sock}/.s.PGSQL.${port}" "${sock}/.s.PGSQL.${port}.lock"
        opts="-p ${port} -k ${sock}"
        for setting in "$@"; do
            opts+=" -c ${setting}"
        done
        log "starting PostgreSQL on 127.0.0.1:${port} (log: ${logfile})"
        if ! as_pg_user "${bindir}/pg_ctl" -D "${data}" -l "${logfile}" -o "${opts}" -w -t 60 start >/dev/null; then
            tail -n 30 "${logfile}" >&2 2>/dev/null || true
            die "PostgreSQL failed to start (see ${logfile})"
        fi
    fi

    for _ in $(seq 1 60); do
        if "${bindir}/pg_isready" -q -h 127.0.0.1 -p "${port}" -t 1; then
            ready=1
            break
        fi
        sleep 0.5
    done
    [[ -n "${ready}" ]] || { tail -n 30 "${logfile}" >&2 2>/dev/null || true; die "PostgreSQL on port ${port} not ready"; }

    export PGHOST=127.0.0.1
    export PGPORT="${port}"
    export TASKER_PG_URL="postgresql://${TASKER_PG_ROLE}@127.0.0.1:${port}/postgres"

    _psql_admin -c "DO \$\$ BEGIN
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${TASKER_PG_ROLE}') THEN
            CREATE ROLE ${TASKER_PG_ROLE} SUPERUSER LOGIN;
        END IF;
    END \$\$;" || die "could not create role ${TASKER_PG_ROLE}"
    log "PostgreSQL ready: ${TASKER_PG_URL}"
}

# stop_cluster AREA: fast shutdown; falls back to immediate. Quiet no-op if not running.
stop_cluster() {
    local area="${1:?stop_cluster needs a directory}" bindir data
    [[ -d "${area}" ]] || return 0
    area="$(cd "${area}" && pwd -P)"   # as_pg_user runs from /: use absolute paths
    data="${area}/data"
    [[ -f "${data}/PG_VERSION" ]] || return 0
    _running_postmaster_port "${data}" >/dev/null 2>&1 || return 0
    bindir="$(pg_bindir)" || return 0
    log "stopping PostgreSQL (${data})"
    if ! as_pg_user "${bindir}/pg_ctl" -D "${data}" -m fast -w -t 60 stop >/dev/null; then
        warn "fast shutdown failed; trying immediate"
        as_pg_user "${bindir}/pg_ctl" -D "${data}" -m immediate -w -t 30 stop >/dev/null || true
    fi
}

# ensure_database NAME: create NAME owned by tasker unless it exists (needs start_cluster).
ensure_database() {
    local name="${1:?ensure_database needs a name}" exists
    exists="$(_psql_admin -At -c "SELECT 1 FROM pg_database WHERE datname = '${name}'")"
    if [[ "${exists}" != "1" ]]; then
        log "creating database ${name}"
        _psql_admin -c "CREATE DATABASE \"${name}\" OWNER ${TASKER_PG_ROLE}" \
            || die "could not create database ${name}"
    fi
}

# database_url NAME: connection URL for role tasker to database NAME (needs start_cluster).
database_url() {
    printf 'postgresql://%s@127.0.0.1:%s/%s\n' "${TASKER_PG_ROLE}" "${PGPORT:?cluster not started}" "${1:?}"
}
