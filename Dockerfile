# The real-Batsim tests in a container: Debian 12 (the project's reference
# system: python3-simgrid = SimGrid 3.32) plus the `batsim` binary and its
# Nix closure taken from the official oarteam/batsim image.
#
#   docker build -t iosched-real-batsim .
#   docker run --rm iosched-real-batsim                       # real-Batsim + protocol tests
#   docker run --rm -v /path/to/shared:/shared:ro iosched-real-batsim   # + golden cases
#
# Not exercised on the development machine (no Docker there); see
# docs/real-batsim.md. BATSIM_IMAGE must be a Batsim 4.2.x image: kapack's
# batsim-docker.nix tags oarteam/batsim with the Batsim version, 4.2.0 for
# kapack's batsim-420. Override with --build-arg BATSIM_IMAGE=... if needed.
ARG BATSIM_IMAGE=oarteam/batsim:4.2.0

FROM ${BATSIM_IMAGE} AS batsim

FROM debian:12
# The oarteam/batsim image is built with Nix (dockerTools): batsim and all
# its libraries are under /nix/store and the entrypoint is the store path.
COPY --from=batsim /nix /nix
RUN set -eu; \
    b=$(find /nix/store -maxdepth 3 -path '*-batsim-*/bin/batsim' | head -n 1); \
    test -n "$b" || { echo "no batsim in the image's /nix/store" >&2; exit 1; }; \
    ln -s "$b" /usr/local/bin/batsim; \
    batsim --version
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
       python3-simgrid python3-venv python3-pip make ca-certificates \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . /src
# a .venv copied from the host would point at the host's Python
RUN rm -rf .venv && bash scripts/setup.sh
ENV IOSCHED_SHARED=/shared
# fail loudly if batsim is missing instead of skipping
CMD ["sh", "-c", "command -v batsim && .venv/bin/python -m pytest -q -rs -p no:cacheprovider tests/test_real_batsim.py tests/test_protocol_transcripts.py tests/test_nix.py"]
