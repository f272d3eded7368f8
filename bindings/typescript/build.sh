#!/bin/sh
# Builds the TypeScript SDK: the Node-API addon (build/tasker_addon.node, gcc against the Node.js
# headers in $NODE_INCLUDE, default /usr/include/node) and the TypeScript (dist/, Debian's tsc).
# Needs: gcc, Node.js >= 18 headers (Debian: nodejs, libnode-dev), tsc (Debian: node-typescript).
set -eu
cd "$(dirname "$0")"
NODE_INCLUDE=${NODE_INCLUDE:-/usr/include/node}
CC=${CC:-gcc}
TSC=${TSC:-tsc}
mkdir -p build
# Built beside and renamed into place: a process running the tests meanwhile (another build, a
# loaded addon) never sees a half-written addon or an emptied dist/.
"$CC" -shared -fPIC -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror \
    -I"$NODE_INCLUDE" -o "build/tasker_addon.node.$$" native/tasker_addon.c native/tasker_library.c -ldl -lm -lpthread
mv -f "build/tasker_addon.node.$$" build/tasker_addon.node
rm -rf "dist.tmp.$$" "dist.old.$$"
"$TSC" -p tsconfig.json --outDir "dist.tmp.$$"
mv -T dist "dist.old.$$" 2>/dev/null || true
# Another build may have put its dist/ in place meanwhile (same sources): keep that one.
mv -T "dist.tmp.$$" dist 2>/dev/null || rm -rf "dist.tmp.$$"
rm -rf "dist.old.$$"
# The examples (build/examples), importing the package by name as an installed copy would:
# build/node_modules/@tasker-swift/worker links to this directory.
mkdir -p build/node_modules/@tasker-swift
ln -sfn ../../.. build/node_modules/@tasker-swift/worker
"$TSC" -p examples/tsconfig.json
