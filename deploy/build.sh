#!/bin/sh
# build.sh OUTPUT: build the static wf binary the images ship. The Dockerfile
# runs this script and `make check-deploy` runs it too, so what CI checks is
# what the image holds. CGO_ENABLED=0: wf needs no C library (the GDAL image
# variant calls GDAL's command-line tools, it does not link libgdal), so the
# binary runs on any Linux, distroless included. -trimpath keeps build paths
# out of the binary.
set -eu
out=${1:?usage: deploy/build.sh OUTPUT}
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out" .
