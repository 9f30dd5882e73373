#!/usr/bin/env bash
# Stand-ins for the Dockerfile's two base images, for a machine that reaches Debian's mirror and
# crates.io but no container registry (this project's build machine: docs/operations.md,
# "The container image"):
#
#   debian:bookworm-slim   a minbase Debian 12 made with debootstrap, imported
#   rust:1-bookworm        that, with gcc/make/perl, this machine's stable Rust toolchain
#                          (rustup's, copied) and its extra CA certificates (an egress proxy's)
#
# Both are tagged under localhost/, which podman's short-name lookup finds first, so
# `podman build --pull=never .` builds the unchanged Dockerfile. Needs root, podman, debootstrap.
set -euo pipefail
command -v podman >/dev/null || { echo "local-base-images: podman is required" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "local-base-images: debootstrap is required" >&2; exit 1; }
toolchain="${RUSTUP_HOME:-$HOME/.rustup}/toolchains/stable-x86_64-unknown-linux-gnu"
[ -d "$toolchain" ] || { echo "local-base-images: no stable toolchain at $toolchain" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

debootstrap --variant=minbase bookworm "$work/rootfs" http://deb.debian.org/debian >"$work/debootstrap.log" \
  || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
tar -C "$work/rootfs" -c . | podman import - localhost/debian:bookworm-slim >/dev/null
rm -rf "$work/rootfs"

ctx="$work/rust"
mkdir -p "$ctx/rustup/toolchains" "$ctx/cargo-bin" "$ctx/cas"
cp "${RUSTUP_HOME:-$HOME/.rustup}/settings.toml" "$ctx/rustup/"
cp -a "$toolchain" "$ctx/rustup/toolchains/"
rm -rf "$ctx/rustup/toolchains/stable-x86_64-unknown-linux-gnu/share/doc"
cp -a "${CARGO_HOME:-$HOME/.cargo}"/bin/{rustup,cargo,rustc,rustdoc} "$ctx/cargo-bin/"
cp /usr/local/share/ca-certificates/*.crt "$ctx/cas/" 2>/dev/null || true
cat >"$ctx/Containerfile" <<'EOF'
FROM localhost/debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc g++ libc6-dev make perl python3 ca-certificates pkg-config \
    && rm -rf /var/lib/apt/lists/*
COPY rustup /usr/local/rustup
COPY cargo-bin /usr/local/cargo/bin
COPY cas/ /usr/local/share/ca-certificates/
RUN update-ca-certificates
ENV RUSTUP_HOME=/usr/local/rustup CARGO_HOME=/usr/local/cargo \
    PATH=/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
EOF
podman build --pull=never -q -t localhost/rust:1-bookworm "$ctx" >/dev/null
podman images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E 'localhost/(debian|rust)'
