#!/usr/bin/env bash
# Stages the exporter's install layout into DEST, the one layout every artefact ships (the
# container image, deploy/container/build.sh; an install under /opt, docs/install-systemd.md):
#   DEST/dist/                          the built CLI and daemon (dist/cli/main.js)
#   DEST/native/build/libmfe-reader.so  the bounded reader (src/reads/native.ts loads it from
#                                       dist/../native/build): without it every read runs on the
#                                       event loop with no timeout, so its absence stops the stage
#   DEST/config/, package.json, package-lock.json, README.md and docs/ (the unit's Documentation=)
#   DEST/node_modules/                  production dependencies only, from the lockfile
# Run it after `npm ci` (which builds dist/ and the reader). The reader is built here, for this
# machine's C library: stage on the target, or on a machine whose glibc is no newer than the
# target's (the image's base, Debian trixie, has 2.41).
#   bash scripts/stage.sh DEST
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dest=${1:?usage: scripts/stage.sh DEST}
reader=native/build/libmfe-reader.so
for f in dist/cli/main.js dist/build.json "$reader"; do
  if [[ ! -f $f ]]; then
    echo "stage: $f is missing: run npm ci (or npm run build) first; the reader needs a C compiler (make, cc)" >&2
    exit 1
  fi
done
mkdir -p "$dest/native/build"
cp -r dist config docs package.json package-lock.json README.md "$dest"/
cp "$reader" "$dest/$reader"
# Production dependencies only, from the lockfile and npm's cache; no install scripts run
# (koffi ships its prebuilt native module in the package; `prepare` would rebuild dist/).
(cd "$dest" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error >/dev/null)
