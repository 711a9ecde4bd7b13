#!/usr/bin/env bash
# hack/demo.sh: what `make demo` runs.
#
#   hack/demo.sh              build, make sure ./bin/prometheus exists, run the demo
#   hack/demo.sh screenshot   render out/report.html to docs/demo.png with headless Chromium
#
# It builds the service and the demo into ./bin, installs the pinned Prometheus (3.x, built from
# the github.com/prometheus/prometheus Go module by hack/install-tools.sh, cached under
# ~/.cache/poolparity) into ./bin, and runs bin/poolparity-demo (one case of `poolparity-parity local`:
# docs/demo.md) from the checkout, whose examples/ holds the requests files, with SERVICE, SCENARIO,
# DURATION and GRAY_WEIGHT passed through (SERVICE=example builds and runs bin/imagesvc instead of bin/poolparity; every other knob is a DEMO_* variable or a flag; see
# `bin/poolparity-demo -h`). The demo's exit status is the verdict: 0 PASS, 1 FAIL, 3 NO DATA.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=hack/lib.sh
. hack/lib.sh

export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"

screenshot() {
	local html=${1:-out/report.html} png=${2:-docs/demo.png} browser="" profile
	[[ -f $html ]] || die "$html not found: run make demo first"
	for b in chromium chromium-browser google-chrome; do
		command -v "$b" >/dev/null 2>&1 && browser=$b && break
	done
	if [[ -z $browser ]]; then
		log "chromium not found: installing Debian's package (hack/install-tools.sh chromium)"
		hack/install-tools.sh chromium
		browser=chromium
	fi
	profile=$(mktemp -d)
	mkdir -p "$(dirname "$png")"
	# Loopback-only, no first-run work, no background fetches.
	timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--hide-scrollbars --user-data-dir="$profile" --window-size=1100,1400 \
		--screenshot="$(realpath -m "$png")" "file://$(realpath "$html")" >/dev/null 2>&1 || {
		rm -rf "$profile"
		die "$browser could not render $html"
	}
	rm -rf "$profile"
	log "wrote $png"
}

case ${1:-run} in
screenshot)
	shift
	screenshot "$@"
	exit 0
	;;
run) ;;
*) die "usage: hack/demo.sh [run|screenshot [HTML PNG]]" ;;
esac

mkdir -p bin
if [[ ${SERVICE:-poolparity} == example ]]; then
	log "building bin/imagesvc (the example service) and bin/poolparity-demo"
	CGO_ENABLED=0 go build -trimpath -o bin/imagesvc ./examples/imagesvc
else
	log "building bin/poolparity and bin/poolparity-demo"
	CGO_ENABLED=0 go build -trimpath -o bin/poolparity ./app/cmd/poolparity
fi
CGO_ENABLED=0 go build -trimpath -o bin/poolparity-demo ./app/cmd/poolparity-demo

if [[ -z ${DEMO_PROMETHEUS_BIN:-} ]]; then
	if ! bin/prometheus --version >/dev/null 2>&1; then
		log "bin/prometheus missing: building the pinned Prometheus (first time only, several minutes; cached afterwards)"
		hack/install-tools.sh prometheus
	fi
fi

if [[ ${TELEMETRY:-metrics} == otlp && -z ${DEMO_OTELCOL_BIN:-} ]] && ! bin/otelcol --version >/dev/null 2>&1; then
	log "bin/otelcol missing: building the pinned collector (first time only; cached afterwards)"
	hack/install-tools.sh otelcol
fi

# exec: Ctrl-C reaches the demo directly, which stops everything it started.
exec bin/poolparity-demo
