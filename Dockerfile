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
# again from what they counted (pgo/build).
RUN pgo/build --target x86_64-unknown-linux-gnu \
    && strip target/x86_64-unknown-linux-gnu/dist/rlockd

# Runtime stage: the binary alone (no shell, no package manager), run as an
# unprivileged user. TLS (rustls) is built in: for a TLS-only deployment,
# mount the certificates as files and turn the plain port off; flags after
# the image name override the ENTRYPOINT's, and the health check needs the
# same files (README, "Deployment"):
#   docker run -v /etc/rlockd/tls:/tls:ro -p 6380:6380 \
#     --health-cmd '/usr/local/bin/rlockd --health-check --port 0 --tls-port 6380 --tls-cert-file /tls/rlockd.crt --tls-key-file /tls/rlockd.key --tls-ca-cert-file /tls/ca.crt' \
#     rlockd --port 0 --tls-port 6380 --tls-cert-file /tls/rlockd.crt \
#     --tls-key-file /tls/rlockd.key --tls-ca-cert-file /tls/ca.crt
FROM scratch
COPY --from=build /src/target/x86_64-unknown-linux-gnu/dist/rlockd /usr/local/bin/rlockd
USER 65532:65532
EXPOSE 6379
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
    CMD ["/usr/local/bin/rlockd", "--health-check", "--port", "6379"]
ENTRYPOINT ["/usr/local/bin/rlockd", "--bind", "0.0.0.0", "--port", "6379"]
