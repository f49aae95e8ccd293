#!/usr/bin/env bash
# The image's base, made offline-friendly from Debian's mirror (no image registry needed):
# a minimal Debian trixie root (Essential packages plus Node.js 20 and libibverbs) made with
# mmdebstrap, imported into podman as $BASE_IMAGE. Debian bookworm's nodejs is 18; trixie's is 20.
set -euo pipefail
BASE_IMAGE=${BASE_IMAGE:-localhost/mxl-fabric-exporter-base:trixie}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mmdebstrap --quiet --variant=essential --mode=root \
  --include=nodejs,libibverbs1,ibverbs-providers \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  trixie "$work/root.tar" "$MIRROR"
podman import --quiet "$work/root.tar" "$BASE_IMAGE" >/dev/null
echo "base image $BASE_IMAGE imported"
