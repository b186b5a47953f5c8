# Build stage: a release binary from the locked dependency set.
FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY benches ./benches
RUN cargo build --release --locked --bin rlockd \
    && strip target/release/rlockd

# Runtime stage: glibc and nothing else, as a non-root user.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/target/release/rlockd /usr/local/bin/rlockd
USER nonroot
EXPOSE 6379
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
    CMD ["/usr/local/bin/rlockd", "--health-check", "--port", "6379"]
ENTRYPOINT ["/usr/local/bin/rlockd", "--bind", "0.0.0.0", "--port", "6379"]
