#!/usr/bin/env bash
# hack/image.sh: build the poolparity image (make image): the service, the PoolCanary controller,
# the load generator, the judge and the Argo Rollouts metric plugin.
#   1. Static (CGO_ENABLED=0) linux binaries of ./app/cmd/{poolparity,poolparity-controller,
#      poolparity-load,poolparity-judge,poolparity-argo-plugin} into bin/image-linux-<arch>/, each
#      checked to have no ELF interpreter.
#   2. docker build -t "$IMAGE" . with BuildKit (the multi-stage Dockerfile). It needs a Docker
#      engine: without one it fails with one line saying so.
# Env: IMAGE (default poolparity:dev), GOARCH (default: the host's), IMAGE_OFFLINE=1 (take the
# binaries of step 1 and a scratch runtime base, so no image is pulled: the offline kind cluster).
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/lib.sh

IMAGE=${IMAGE:-poolparity:dev}
arch=${GOARCH:-$(go env GOARCH)}

if ! command -v docker >/dev/null 2>&1 || ! docker info >/dev/null 2>&1; then
	die "no Docker engine answers (docker info failed): 'make image' needs one; 'make test-kind' starts one"
fi

out=bin/image-linux-$arch
mkdir -p "$out"
for name in poolparity poolparity-controller poolparity-load poolparity-judge poolparity-argo-plugin; do
	log "building static binary $out/$name"
	CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -ldflags="-s -w" -o "$out/$name" ./app/cmd/$name
	if command -v readelf >/dev/null 2>&1 && readelf -l "$out/$name" | grep -q 'Requesting program interpreter'; then
		die "$out/$name is dynamically linked; distroless static needs a static binary"
	fi
done

# BuildKit builds only the stages the image needs (so an offline build pulls nothing). A Docker
# client newer than 23 needs its buildx plugin for that; Debian's docker.io client (20.10) has
# BuildKit built in, so use it when buildx is missing (as on this project's CI machines).
client=docker
if ! docker buildx version >/dev/null 2>&1; then
	if [[ -x /usr/bin/docker ]] && /usr/bin/docker version --format '{{.Client.Version}}' 2>/dev/null | grep -q '^20\.'; then
		client=/usr/bin/docker
	else
		die "this Docker client cannot build with BuildKit: install its buildx plugin"
	fi
fi

args=(--build-arg "TARGETARCH=$arch")
if [[ ${IMAGE_OFFLINE:-} == 1 ]]; then
	args+=(--build-arg BINARIES=context --build-arg RUNTIME_IMAGE=scratch)
fi
log "docker build -t $IMAGE ${args[*]} ."
DOCKER_BUILDKIT=1 "$client" build "${args[@]}" -t "$IMAGE" .
log "built $IMAGE"
