#!/usr/bin/env bash
# bindings/python/build_wheel.sh — a wheel of tasker-worker-swift that runs without the Swift toolchain.
#
#   bindings/python/build_wheel.sh [OUTPUT_DIR]     (default: bindings/python/dist)
#
# Builds the release library (`swift build -c release --product TaskerWorkerFFI`) with the Swift
# runtime linked statically (-static-stdlib) and RUNPATH $ORIGIN. When the toolchain cannot link it
# statically, it builds it dynamically and bundles the toolchain's libraries it needs (libswift*.so,
# Foundation, dispatch; their RUNPATH is already $ORIGIN) next to it. The library goes into
# tasker_worker_swift/lib/ of a copy of the package (stripped), and `pip wheel` makes a py3-none-<platform>
# wheel of it (setup.py tags it). Finally checks with ldd that the bundled library resolves every
# dependency outside the toolchain (libpq and the C library come from the system: `apt-get install
# libpq5` on the target machine). To run the binding tests against the bundled library:
# TASKER_WORKER_LIBRARY=<site-packages>/tasker_worker_swift/lib/libTaskerWorkerFFI.so \
#   TASKER_TEST_BINDINGS=only scripts/test
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../.." && pwd)"
out="$(mkdir -p "${1:-${here}/dist}" && cd "${1:-${here}/dist}" && pwd)"
export SWIFT_DETERMINISTIC_HASHING=1
log() { printf '[tasker] %s\n' "$*" >&2; }
die() { printf '[tasker] error: %s\n' "$*" >&2; exit 1; }

cd "${root}"
toolchain_lib="$(cd "$(dirname "$(readlink -f "$(command -v swift)")")/../lib" && pwd)"
rpath=(-Xlinker -rpath -Xlinker '$ORIGIN')
mode=static
log "swift build -c release --product TaskerWorkerFFI -Xswiftc -static-stdlib"
if ! swift build -c release --product TaskerWorkerFFI -Xswiftc -static-stdlib "${rpath[@]}" >&2; then
    log "static Swift runtime not linkable into a shared library here; bundling the toolchain's libraries instead"
    mode=bundled
    swift build -c release --product TaskerWorkerFFI "${rpath[@]}" >&2
fi
library="$(swift build -c release --show-bin-path)/libTaskerWorkerFFI.so"
[[ -f "${library}" ]] || die "${library} not built"

stage="$(mktemp -d "${TMPDIR:-/tmp}/tasker-wheel.XXXXXX")"
trap 'rm -rf "${stage}"' EXIT
cp -r "${here}/." "${stage}/package"
rm -rf "${stage}/package/dist" "${stage}/package/build" "${stage}/package/src/"*.egg-info
lib_dir="${stage}/package/src/tasker_worker_swift/lib"
mkdir -p "${lib_dir}"
cp "${library}" "${lib_dir}/"
# The configuration tree (base + environments), for hosts that run outside a repository checkout.
mkdir -p "${stage}/package/src/tasker_worker_swift/config"
cp -r "${here}/../../config/tasker/base" "${here}/../../config/tasker/environments" "${stage}/package/src/tasker_worker_swift/config/"
# Symbols only a debugger needs go (about half the size); the dynamic symbols stay.
if command -v strip >/dev/null 2>&1; then strip --strip-unneeded "${lib_dir}/libTaskerWorkerFFI.so"; fi

# Every library the bundle resolves inside the toolchain is copied next to it (transitively).
if [[ "${mode}" == bundled ]] || ldd "${library}" | grep -q "${toolchain_lib}"; then
    for _ in 1 2 3 4; do
        while read -r path; do
            [[ -f "${lib_dir}/$(basename "${path}")" ]] || cp "${path}" "${lib_dir}/"
        done < <(for so in "${lib_dir}"/*.so*; do ldd "${so}"; done | awk -v t="${toolchain_lib}" 'index($3, t) == 1 { print $3 }' | sort -u)
    done
fi

# The check: with the toolchain out of reach, nothing is missing and nothing points into it.
check="$(cd "${lib_dir}" && for so in *.so*; do LD_LIBRARY_PATH= ldd "./${so}"; done)"
if grep -q "not found" <<<"${check}"; then
    die "the bundled library has unresolved dependencies:"$'\n'"$(grep 'not found' <<<"${check}" | sort -u)"
fi
if grep -q "${toolchain_lib}" <<<"${check}"; then
    die "the bundled library still loads from the toolchain:"$'\n'"$(grep "${toolchain_lib}" <<<"${check}" | sort -u)"
fi
log "bundled (${mode}): $(cd "${lib_dir}" && ls | tr '\n' ' ')"

PIP_DISABLE_PIP_VERSION_CHECK=1 python3 -m pip wheel -q --no-deps -w "${out}" "${stage}/package" >&2
log "wheel: $(ls -t "${out}"/tasker_worker_swift-*.whl | head -n 1)"
