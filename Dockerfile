# Build stage: a release binary from the locked dependency set.
FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY benches ./benches
COPY pgo ./pgo
# Statically linked (glibc's crt-static) and link-time optimised: the image
# needs no libraries, and less code is touched at start-up. A static binary
# cannot look up glibc's getrandom at run time, so the random-number crate
# is told to make the system call itself rather than read /dev/urandom.
ENV RUSTFLAGS="-C target-feature=+crt-static --cfg getrandom_backend=\"linux_getrandom\""
# Profile-guided: built instrumented, run through the lock benches, built
# again from what they counted (pgo/build), natively for the platform being
# built (buildx's TARGETARCH: amd64 or arm64). The runtime stage's files are
# laid out under target/image: the binary, and an empty /data for the volume.
ARG TARGETARCH
RUN case "${TARGETARCH:-amd64}" in \
        amd64) arch=x86_64 ;; \
        arm64) arch=aarch64 ;; \
        *) echo "unsupported TARGETARCH $TARGETARCH" >&2; exit 1 ;; \
    esac \
    && pgo/build --target "$arch-unknown-linux-gnu" \
    && rm -rf target/image && mkdir -p target/image/data \
    && strip -o target/image/rlockd "target/$arch-unknown-linux-gnu/dist/rlockd"

# Runtime stage: the binary alone (no shell, no package manager), run as an
# unprivileged user in /data, a volume it owns (a scratch image has no mkdir:
# the empty folder comes from the build stage). The image's config file makes
# it reachable from other containers, as the official Redis image is; the
# server and the health check both read it and RLOCKD_PASSWORD. Flags after
# the image name follow the file (`docker run rlockd --appendonly yes`);
# docs/operations.md, "Deployment", has TLS and passwords.
FROM scratch
COPY --from=build /src/target/image/rlockd /usr/local/bin/rlockd
COPY --from=build --chown=65532:65532 /src/target/image/data /data
COPY docker/rlockd.conf /etc/rlockd/rlockd.conf
USER 65532:65532
WORKDIR /data
VOLUME /data
EXPOSE 6379
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
    CMD ["/usr/local/bin/rlockd", "--health-check", "/etc/rlockd/rlockd.conf"]
ENTRYPOINT ["/usr/local/bin/rlockd", "/etc/rlockd/rlockd.conf"]
