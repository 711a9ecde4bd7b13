# syntax=docker/dockerfile:1
# poolparity image: the service and the PoolCanary controller as static Go binaries on distroless (no shell, no package manager),
# running as the image's nonroot user 65532. Build: `make image` (hack/image.sh).

# Keep GO_VERSION's major.minor equal to go.mod's go directive (deploy/image_test.go checks it).
ARG GO_VERSION=1.26.8

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
ARG TARGETOS=linux
ARG TARGETARCH=amd64
WORKDIR /src
ENV GOTOOLCHAIN=local CGO_ENABLED=0
COPY go.mod go.sum ./
COPY instrument/go.mod instrument/go.sum ./instrument/
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags="-s -w" -o /out/ ./app/cmd/poolparity ./app/cmd/poolparity-controller

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/poolparity /poolparity
# The PoolCanary controller ships in the same image (the chart runs it with
# command: ["/poolparity-controller"]).
COPY --from=build /out/poolparity-controller /poolparity-controller
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/poolparity"]
