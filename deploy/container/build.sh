#!/usr/bin/env bash
# Builds the exporter image with podman: makes the base if it is missing (base.sh), stages the
# built app with scripts/stage.sh (dist/, the bounded reader native/build/libmfe-reader.so,
# config/, package files, production node_modules), then builds Containerfile with the stage as
# context. Needs podman and, for the base, mmdebstrap.
#   IMAGE=mxl-fabric-exporter:0.1.0 BASE_IMAGE=... bash deploy/container/build.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
VERSION=$(node -p "require('./package.json').version")
IMAGE=${IMAGE:-mxl-fabric-exporter:$VERSION}
BASE_IMAGE=${BASE_IMAGE:-localhost/mxl-fabric-exporter-base:trixie}
export BASE_IMAGE

podman image exists "$BASE_IMAGE" || bash deploy/container/base.sh

npm run --silent build
REVISION=$(node -p "require('./dist/build.json').revision")
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
bash scripts/stage.sh "$stage"

podman build --quiet --file Containerfile --build-arg "BASE=$BASE_IMAGE" --build-arg "VERSION=$VERSION" \
  --build-arg "REVISION=$REVISION" --tag "$IMAGE" "$stage" >/dev/null
echo "image $IMAGE built from $BASE_IMAGE (revision $REVISION)"
