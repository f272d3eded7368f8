# shellcheck shell=bash
#
# A private RabbitMQ broker for tests and local runs (Debian's rabbitmq-server), sharing nothing with
# any other broker on the machine: its own directory, node name, free ports and epmd. Source after
# scripts/lib/common.sh (log/warn/die, _apt_install, _free_port).
#
#   ensure_rabbitmq_package     apt-get install rabbitmq-server when missing
#   start_broker AREA [management]
#                               start a broker under AREA in the background (returns at once); with
#                               `management`, the management plugin too (HTTP UI and API on loopback)
#   await_broker AREA           wait until it serves (about 10 s); exports TASKER_RABBITMQ_URL (and
#                               TASKER_RABBITMQ_MANAGEMENT_URL with the plugin)
#   stop_broker AREA            rabbitmqctl stop, make sure beam.smp is gone, kill the private epmd
#                               (no-op when nothing was started; safe to call twice)
#
# AREA layout: AREA/home (HOME, the Erlang cookie), AREA/mnesia, AREA/log, AREA/rmq.conf,
# AREA/enabled_plugins, AREA/pid; AREA/env holds the node name and ports for await/stop.

TASKER_RABBITMQ_BIN="/usr/lib/rabbitmq/bin"

# ensure_rabbitmq_package: the Debian package (3.10.8 in Debian 12; brings Erlang).
ensure_rabbitmq_package() {
    if [[ ! -x "${TASKER_RABBITMQ_BIN}/rabbitmq-server" ]]; then
        _apt_install rabbitmq-server
        [[ -x "${TASKER_RABBITMQ_BIN}/rabbitmq-server" ]] || die "rabbitmq-server still missing after apt-get install"
    fi
}

# _as_broker_user CMD...: as the package's rabbitmq user when root (the broker refuses nothing as root,
# but its files should not be root's), else as ourselves; with the area's environment.
_as_broker_user() {
    if [[ "${EUID}" -eq 0 ]] && id -u rabbitmq >/dev/null 2>&1; then
        (cd / && runuser -u rabbitmq -- env "${_TASKER_BROKER_ENV[@]}" "$@")
    else
        (cd / && env "${_TASKER_BROKER_ENV[@]}" "$@")
    fi
}

# _broker_env AREA: the environment of every command for the broker under AREA (from AREA/env).
_broker_env() {
    local area="$1"
    # shellcheck source=/dev/null
    source "${area}/env"
    _TASKER_BROKER_ENV=(
        "HOME=${area}/home"
        "RABBITMQ_NODENAME=${BROKER_NODE}"
        "RABBITMQ_MNESIA_BASE=${area}/mnesia"
        "RABBITMQ_LOG_BASE=${area}/log"
        "RABBITMQ_ENABLED_PLUGINS_FILE=${area}/enabled_plugins"
        "RABBITMQ_PID_FILE=${area}/pid"
        "RABBITMQ_CONFIG_FILE=${area}/rmq"
        "RABBITMQ_NODE_IP_ADDRESS=127.0.0.1"
        "RABBITMQ_DIST_PORT=${BROKER_DIST_PORT}"
        "ERL_EPMD_PORT=${BROKER_EPMD_PORT}"
        "ERL_EPMD_ADDRESS=127.0.0.1"
    )
}

# start_broker AREA [management]: writes the area and starts rabbitmq-server in the background.
start_broker() {
    local area="$1" management="${2:-}" port dist epmd http=""
    ensure_rabbitmq_package
    mkdir -p "${area}/home" "${area}/mnesia" "${area}/log"
    port="$(_free_port)"
    dist="$(_free_port)"
    epmd="$(_free_port)"
    [[ "${port}" != "${dist}" && "${dist}" != "${epmd}" && "${port}" != "${epmd}" ]] \
        || { port="$(_free_port)"; dist="$(_free_port)"; epmd="$(_free_port)"; }
    if [[ "${management}" == management ]]; then
        http="$(_free_port 15672)"
        [[ "${http}" != "${port}" && "${http}" != "${dist}" && "${http}" != "${epmd}" ]] || http="$(_free_port)"
    fi
    cat >"${area}/env" <<ENV
BROKER_NODE=tasker-$$-${RANDOM}@localhost
BROKER_PORT=${port}
BROKER_DIST_PORT=${dist}
BROKER_EPMD_PORT=${epmd}
BROKER_MANAGEMENT_PORT=${http}
BROKER_STARTED=$(date +%s)
ENV
    printf 'listeners.tcp.default = 127.0.0.1:%s\nloopback_users = none\n' "${port}" >"${area}/rmq.conf"
    if [[ -n "${http}" ]]; then
        printf 'management.tcp.ip = 127.0.0.1\nmanagement.tcp.port = %s\n' "${http}" >>"${area}/rmq.conf"
        printf '[rabbitmq_management].\n' >"${area}/enabled_plugins"
    else
        printf '[].\n' >"${area}/enabled_plugins"
    fi
    if [[ "${EUID}" -eq 0 ]] && id -u rabbitmq >/dev/null 2>&1; then chown -R rabbitmq: "${area}"; fi
    _broker_env "${area}"
    log "starting RabbitMQ ${BROKER_NODE} on 127.0.0.1:${port} (epmd ${epmd}, dist ${dist}) in ${area}"
    _as_broker_user "${TASKER_RABBITMQ_BIN}/rabbitmq-server" >"${area}/server.out" 2>&1 </dev/null &
    printf '%s\n' "$!" >"${area}/launcher.pid"
}

# await_broker AREA: waits up to 90 s for the node (it registers with epmd after a few seconds;
# await_startup fails until then, and waits for the plugins); exports TASKER_RABBITMQ_URL,
# TASKER_RABBITMQ_NODE and, when started with `management`, TASKER_RABBITMQ_MANAGEMENT_URL.
await_broker() {
    local area="$1" attempt
    _broker_env "${area}"
    for attempt in $(seq 1 45); do
        if _as_broker_user "${TASKER_RABBITMQ_BIN}/rabbitmqctl" -n "${BROKER_NODE}" await_startup --timeout 30 \
            >/dev/null 2>&1; then
            export TASKER_RABBITMQ_URL="amqp://guest:guest@127.0.0.1:${BROKER_PORT}/%2F"
            export TASKER_RABBITMQ_NODE="${BROKER_NODE}"
            if [[ -n "${BROKER_MANAGEMENT_PORT:-}" ]]; then
                export TASKER_RABBITMQ_MANAGEMENT_URL="http://127.0.0.1:${BROKER_MANAGEMENT_PORT}/"
            fi
            log "RabbitMQ ${BROKER_NODE} ready (seen $(($(date +%s) - BROKER_STARTED)) s after its start, attempt ${attempt})"
            return 0
        fi
        if ! kill -0 "$(cat "${area}/launcher.pid" 2>/dev/null || echo 0)" 2>/dev/null; then
            tail -n 20 "${area}/server.out" >&2 || true
            die "RabbitMQ exited during start-up (log: ${area}/log)"
        fi
        sleep 2
    done
    die "RabbitMQ ${BROKER_NODE} did not start within 90 s (log: ${area}/log)"
}

# broker_ctl AREA ARGS...: rabbitmqctl against the broker under AREA (tests use it to force closes).
broker_ctl() {
    local area="$1"
    shift
    _broker_env "${area}"
    _as_broker_user "${TASKER_RABBITMQ_BIN}/rabbitmqctl" -n "${BROKER_NODE}" "$@"
}

# _descendants PID: every process below PID (by parent pid), deepest first.
_descendants() {
    local child
    for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do
        _descendants "${child}"
        printf '%s\n' "${child}"
    done
}

# stop_broker AREA: stops the node, ends its beam.smp by pid if it survived, kills the private epmd.
stop_broker() {
    local area="$1" pid="" waited
    [[ -f "${area}/env" ]] || return 0
    _broker_env "${area}"
    pid="$(cat "${area}/pid" 2>/dev/null || true)"
    _as_broker_user "${TASKER_RABBITMQ_BIN}/rabbitmqctl" -n "${BROKER_NODE}" stop >/dev/null 2>&1 || true
    if [[ -n "${pid}" ]]; then
        for waited in $(seq 1 50); do
            kill -0 "${pid}" 2>/dev/null || break
            sleep 0.2
        done
        if kill -0 "${pid}" 2>/dev/null; then
            warn "RabbitMQ beam.smp ${pid} still running after stop (${waited} waits); ending it"
            kill -KILL "${pid}" 2>/dev/null || true
        fi
    fi
    # The launcher (runuser → rabbitmq-server → beam.smp) ends with the node. Stopped during start-up
    # (no pid file yet, rabbitmqctl cannot reach it): end the launcher's descendants by pid.
    local launcher
    launcher="$(cat "${area}/launcher.pid" 2>/dev/null || true)"
    if [[ -n "${launcher}" ]] && kill -0 "${launcher}" 2>/dev/null; then
        local -a tree=()
        mapfile -t tree < <(_descendants "${launcher}")
        ((${#tree[@]} == 0)) || kill -KILL "${tree[@]}" 2>/dev/null || true
        kill "${launcher}" 2>/dev/null || true
    fi
    _as_broker_user epmd -port "${BROKER_EPMD_PORT}" -kill >/dev/null 2>&1 || true
    rm -f "${area}/env"
}
