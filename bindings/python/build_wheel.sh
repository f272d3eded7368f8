#!/usr/bin/env bash
# bindings/python/build_wheel.sh — a wheel of tasker-worker-swift that runs without the Swift toolchain.
#
#   bindings/python/build_wheel.sh [OUTPUT_DIR]     (default: bindings/python/dist)
#   bindings/python/build_wheel.sh --library PATH [OUTPUT_DIR]
#       packages an already built libTaskerWorkerFFI.so (e.g. the test build's, as CI does: one build
#       per CI run) instead of compiling the release one; the toolchain's libraries it needs are
#       bundled next to it, and the same checks apply.
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
prebuilt=""
if [[ "${1:-}" == "--library" ]]; then
    prebuilt="${2:?--library needs the path of a built libTaskerWorkerFFI.so}"
    [[ -f "${prebuilt}" ]] || { printf '[tasker] error: --library %s: no such file\n' "${prebuilt}" >&2; exit 1; }
    prebuilt="$(cd "$(dirname "${prebuilt}")" && pwd)/$(basename "${prebuilt}")"
    shift 2
fi
out="$(mkdir -p "${1:-${here}/dist}" && cd "${1:-${here}/dist}" && pwd)"
export SWIFT_DETERMINISTIC_HASHING=1
log() { printf '[tasker] %s\n' "$*" >&2; }
die() { printf '[tasker] error: %s\n' "$*" >&2; exit 1; }

cd "${root}"
toolchain_lib="$(cd "$(dirname "$(readlink -f "$(command -v swift)")")/../lib" && pwd)"
rpath=(-Xlinker -rpath -Xlinker '$ORIGIN')
mode=static
if [[ -n "${prebuilt}" ]]; then
    log "packaging ${prebuilt} (no build)"
    mode=bundled
    library="${prebuilt}"
else
    log "swift build -c release --product TaskerWorkerFFI -Xswiftc -static-stdlib"
    if ! swift build -c release --product TaskerWorkerFFI -Xswiftc -static-stdlib "${rpath[@]}" >&2; then
        log "static Swift runtime not linkable into a shared library here; bundling the toolchain's libraries instead"
        mode=bundled
        swift build -c release --product TaskerWorkerFFI "${rpath[@]}" >&2
    fi
    library="$(swift build -c release --show-bin-path)/libTaskerWorkerFFI.so"
fi
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

# A prebuilt library looks in the toolchain first (its RUNPATH, used above to find what to bundle); the bundle's looks next to itself.
if [[ -n "${prebuilt}" ]]; then
    command -v patchelf >/dev/null 2>&1 || die "--library needs patchelf (apt-get install patchelf) to set RUNPATH \$ORIGIN"
    patchelf --set-rpath '$ORIGIN' "${lib_dir}/libTaskerWorkerFFI.so"
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
