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
"$CC" -shared -fPIC -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror \
    -I"$NODE_INCLUDE" -o build/tasker_addon.node native/tasker_addon.c native/tasker_library.c -ldl -lm -lpthread
rm -rf dist
"$TSC" -p tsconfig.json
# The examples (build/examples), importing the package by name as an installed copy would:
# build/node_modules/@tasker-swift/worker links to this directory.
mkdir -p build/node_modules/@tasker-swift
ln -sfn ../../.. build/node_modules/@tasker-swift/worker
"$TSC" -p examples/tsconfig.json
