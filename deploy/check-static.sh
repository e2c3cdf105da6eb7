#!/bin/sh
# check-static.sh BINARY: fail unless BINARY is a statically linked
# executable, by ldd(1) and, where it is installed, file(1): the distroless
# image has no C library to link against.
set -eu
bin=${1:?usage: deploy/check-static.sh BINARY}
if ldd "$bin" >/dev/null 2>&1; then
    echo "deploy: ldd lists shared libraries for $bin:" >&2
    ldd "$bin" >&2
    exit 1
fi
desc="ldd: not a dynamic executable"
if command -v file >/dev/null 2>&1; then
    desc=$(file -b "$bin")
    case "$desc" in
    *"statically linked"*) ;;
    *) echo "deploy: $bin is not statically linked: $desc" >&2; exit 1 ;;
    esac
fi
echo "deploy: $bin is static ($desc)"
