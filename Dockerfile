# poolparity image: the service, the PoolCanary controller and the load generator as static Go
# binaries on distroless (no shell, no package manager), running as the image's nonroot user
# 65532. Build: `make image` (hack/image.sh), which needs a Docker engine with BuildKit.
#
# Two ways to get the binaries (BINARIES):
#   source   (default) build them in the builder stage from BUILDER_IMAGE (golang).
#   context  take them prebuilt from bin/image-linux-<arch>/ in the build context; with
#            RUNTIME_IMAGE=scratch this needs no image from any registry, which is how the offline
#            kind cluster (hack/kindrun) builds it: `IMAGE_OFFLINE=1 hack/image.sh`.

# Keep GO_VERSION's major.minor equal to go.mod's go directive (deploy/image_test.go checks it), and
# the whole version equal to the Makefile's GOTOOLCHAIN: 1.26.10 has the standard library's security
# fixes that 1.26.8 lacks (make vulncheck).
ARG GO_VERSION=1.26.10
ARG BUILDER_IMAGE=golang:${GO_VERSION}-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot
ARG BINARIES=source

FROM --platform=$BUILDPLATFORM ${BUILDER_IMAGE} AS binaries-source
ARG TARGETOS=linux
ARG TARGETARCH=amd64
WORKDIR /src
ENV GOTOOLCHAIN=local CGO_ENABLED=0
COPY go.mod go.sum ./
COPY instrument/go.mod instrument/go.sum ./instrument/
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags="-s -w" -o /out/ ./app/cmd/poolparity ./app/cmd/poolparity-controller ./app/cmd/poolparity-load ./app/cmd/poolparity-judge ./app/cmd/poolparity-argo-plugin

FROM scratch AS binaries-context
ARG TARGETARCH=amd64
COPY bin/image-linux-${TARGETARCH}/ /out/

FROM binaries-${BINARIES} AS binaries

FROM ${RUNTIME_IMAGE}
COPY --from=binaries /out/poolparity /poolparity
# The PoolCanary controller and the in-cluster load generator ship in the same image (the chart
# runs the controller with command: ["/poolparity-controller"]; the kind load Job runs
# /poolparity-load).
COPY --from=binaries /out/poolparity-controller /poolparity-controller
COPY --from=binaries /out/poolparity-load /poolparity-load
# The judge for Flagger's webhooks and Argo's web provider (the chart runs it with command:
# ["/poolparity-judge"]), and the Argo Rollouts metric plugin, which an init container of Argo's
# controller copies out with `/poolparity-argo-plugin install DIR` (docs/argo-rollouts.md).
COPY --from=binaries /out/poolparity-judge /poolparity-judge
COPY --from=binaries /out/poolparity-argo-plugin /poolparity-argo-plugin
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/poolparity"]
