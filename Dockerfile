# The xorflow image: a multi-stage build (the toolchain stays in the first stage), a slim
# runtime stage running as an unprivileged user. Kubernetes manifests: deploy/k8s/.
#
#   docker build -t xorflow:dev .
#   docker run --rm xorflow:dev --help
#
# The S3 client is built in (`--features s3`): pods keep checkpoints in an object store or on a
# shared volume (docs/operations.md).

FROM rust:1-bookworm AS build
WORKDIR /src
# librdkafka (the Kafka client) is compiled from the crate's bundled C sources with the image's
# C compiler and make.
COPY . .
RUN cargo build --release --locked -p xorflow-cli --features s3 \
    && strip target/release/xorflow

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin xorflow \
    && mkdir -p /var/lib/xorflow && chown xorflow:xorflow /var/lib/xorflow
COPY --from=build /src/target/release/xorflow /usr/local/bin/xorflow
USER 10001:10001
WORKDIR /var/lib/xorflow
# 7700: the cluster's own connections (hostfile port); 9464: --metrics-addr.
EXPOSE 7700 9464
ENTRYPOINT ["/usr/local/bin/xorflow"]
CMD ["--help"]
