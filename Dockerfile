# Build stage: a release binary from the locked dependency set.
FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY benches ./benches
RUN cargo build --release --locked --bin rlockd \
    && strip target/release/rlockd

# Runtime stage: the binary and the four glibc libraries it links, nothing
# else (no shell, no package manager), run as an unprivileged user.
FROM scratch
COPY --from=build /lib/x86_64-linux-gnu/libc.so.6 /lib/x86_64-linux-gnu/libm.so.6 /lib/x86_64-linux-gnu/libgcc_s.so.1 /lib/x86_64-linux-gnu/
COPY --from=build /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 /lib64/ld-linux-x86-64.so.2
COPY --from=build /src/target/release/rlockd /usr/local/bin/rlockd
USER 65532:65532
EXPOSE 6379
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
    CMD ["/usr/local/bin/rlockd", "--health-check", "--port", "6379"]
ENTRYPOINT ["/usr/local/bin/rlockd", "--bind", "0.0.0.0", "--port", "6379"]
