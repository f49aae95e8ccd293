#!/usr/bin/env bash
# Host side of the real-MXL scenario, before the boot: MXL must be built (shared/mxl/build.sh
# --fabrics into MXL_PREFIX, /opt/mxl by default), and mxl-gst-testsrc needs a GStreamer plugin
# registry, which the guest cannot write to the read-only host root: build it here into the
# scenario's results dir (guest.sh points GST_REGISTRY at it). usage: prepare.sh OUT_DIR
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../lib.sh
source "$HERE/../lib.sh"
P=${MXL_PREFIX:-/opt/mxl}
[[ -x $P/bin/mxl-fabrics-demo && -x $P/bin/mxl-gst-testsrc && -e $P/lib-rw/libmxl.so ]] ||
  rxe_missing "real MXL is not built in $P; run ../shared/mxl/build.sh --fabrics (MXL_PREFIX=$P)"
rxe_require_cmd gst-inspect-1.0 gstreamer1.0-tools
# mxl-gst-testsrc's pipelines: videotestsrc, audiotestsrc, audioconvert (plugins-base),
# textoverlay (pango: gstreamer1.0-x), interleave (plugins-good).
for element in videotestsrc audiotestsrc audioconvert textoverlay interleave appsink; do
  GST_REGISTRY="$1/gst-registry.bin" gst-inspect-1.0 "$element" >/dev/null 2>&1 ||
    rxe_missing "GStreamer element '$element' is missing; apt-get install gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-x"
done
[[ -s $1/gst-registry.bin ]] || rxe_die "no GStreamer registry written to $1"
