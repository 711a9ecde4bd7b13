#!/usr/bin/env bash
# hack/image.sh: build the poolparity service image (make image).
#   1. Always: static (CGO_ENABLED=0) linux binaries of ./app/cmd/poolparity and ./app/cmd/poolparity-controller
#      into bin/<name>-linux-<arch>, each
#      checked to have no ELF interpreter (so it runs on distroless static).
#   2. When a Docker engine answers: docker build -t "$IMAGE" . (the multi-stage Dockerfile).
#      Otherwise it says so and exits 0: this project's machines have no container engine.
# Env: IMAGE (default poolparity:dev), GOARCH (default: the host's).
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/lib.sh

IMAGE=${IMAGE:-poolparity:dev}
arch=${GOARCH:-$(go env GOARCH)}

mkdir -p bin
for name in poolparity poolparity-controller; do
	out=bin/$name-linux-$arch
	log "building static binary $out"
	CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -ldflags="-s -w" -o "$out" ./app/cmd/$name
	if command -v readelf >/dev/null 2>&1 && readelf -l "$out" | grep -q 'Requesting program interpreter'; then
		die "$out is dynamically linked; distroless static needs a static binary"
	fi
	log "static binary ok: $(du -h "$out" | cut -f1)"
done

if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
	log "docker build -t $IMAGE ."
	docker build -t "$IMAGE" .
	log "built $IMAGE"
else
	log "no Docker engine answers here (docker info failed): skipped 'docker build -t $IMAGE .'."
	log "Build the image where Docker runs; the static binaries above are what the Dockerfile's builder stage produces."
fi
