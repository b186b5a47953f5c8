"""Build hooks: put a cargo-built rlockd into the wheel, as the `rlockd`
script, and take the wheel's version from that binary's `--version`."""

from __future__ import annotations

import os
import subprocess
import sysconfig
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from hatchling.metadata.plugin.interface import MetadataHookInterface

#: The build-time variable naming the binary to ship.
BINARY_ENV = "RLOCKD_WHEEL_BINARY"


def shipped_binary(root: str) -> Path:
    """`$RLOCKD_WHEEL_BINARY`, else the release build in cargo's target
    folder (`$CARGO_TARGET_DIR` or the repository's `target/`)."""
    given = os.environ.get(BINARY_ENV)
    if given:
        binary = Path(given)
    else:
        target = os.environ.get("CARGO_TARGET_DIR") or Path(root, "..", "..", "target")
        binary = Path(target, "release", "rlockd")
    if not binary.is_file():
        raise FileNotFoundError(
            f"{binary}: no rlockd binary to package; run `cargo build --release` "
            f"or set ${BINARY_ENV}"
        )
    return binary.resolve()


class CargoVersion(MetadataHookInterface):
    def update(self, metadata: dict) -> None:
        answer = subprocess.run(
            [shipped_binary(self.root), "--version"], capture_output=True, text=True, check=True
        )
        # `rlockd 0.1.0`
        metadata["version"] = answer.stdout.split()[-1]


class ShipBinary(BuildHookInterface):
    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel":
            return
        build_data["shared_scripts"][str(shipped_binary(self.root))] = "rlockd"
        # The binary runs under any Python 3, on this platform only. The tag
        # claims no manylinux baseline: the wheel is for the machine family
        # it was built on (CI, a developer's), not for an index.
        platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
        build_data["tag"] = f"py3-none-{platform}"
        build_data["pure_python"] = False
