"""Podman for the container tests: what the machine must provide, and the base image.

The image is built ``FROM debian:bookworm-slim``. Where no image registry is reachable (these test
machines), that base is made locally once per machine, the way Debian's own slim image is made: a
minimal debootstrap of bookworm whose packages leave out documentation, manual pages and
translations, imported into podman's store under that name, where later runs find it. Podman runs
here with runc and with the ulimits the sandbox allows (higher ones are refused)."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.support.skips import skip_or_fail

BASE_IMAGE = "debian:bookworm-slim"
MIRROR = "http://deb.debian.org/debian"
# Options every podman command that runs a container takes on these machines.
RUNTIME = ("--runtime", "runc")
ULIMITS = ("--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1000:1000")

# What Debian's slim images keep out of every package installed later (their dpkg configuration).
_SLIM_DPKG = """\
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
"""
_SOURCES = f"""\
Types: deb
URIs: {MIRROR}
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""


def require_podman() -> str:
    """podman's path; skips (fails in CI) naming the packages when podman or runc is missing."""
    podman = shutil.which("podman")
    if podman is None or shutil.which("runc") is None:
        skip_or_fail("podman and runc are needed to build and run the container image "
                     "(Debian: apt-get install podman runc debootstrap podman-compose)")
    return podman


def podman(*args: str, timeout: float = 600, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout, **kwargs)
    if check and result.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result


def ensure_base_image() -> None:
    """Makes ``debian:bookworm-slim`` in podman's store unless it is there already."""
    if podman("image", "exists", BASE_IMAGE, check=False).returncode == 0:
        return
    if shutil.which("debootstrap") is None:
        skip_or_fail(f"{BASE_IMAGE} is not in podman's store and no registry is reachable: debootstrap "
                     "makes it (Debian: apt-get install debootstrap)")
    with tempfile.TemporaryDirectory(prefix="bookworm-") as work:
        root = Path(work) / "root"
        result = subprocess.run(["debootstrap", "--variant=minbase", "bookworm", str(root), MIRROR],
                                capture_output=True, text=True, timeout=1200)
        if result.returncode != 0:
            raise AssertionError(f"debootstrap failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        _slim(root)
        tar = subprocess.Popen(["tar", "-C", str(root), "--numeric-owner", "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(["podman", "import", "-", BASE_IMAGE], stdin=tar.stdout, capture_output=True,
                                  text=True, timeout=600)
        tar.stdout.close()
        if tar.wait() != 0 or imported.returncode != 0:
            raise AssertionError(f"podman import failed: {imported.stderr}")


def _slim(root: Path) -> None:
    (root / "etc/dpkg/dpkg.cfg.d/slim").write_text(_SLIM_DPKG)
    (root / "etc/apt/sources.list").unlink(missing_ok=True)
    (root / "etc/apt/sources.list.d/debian.sources").write_text(_SOURCES)
    # What debootstrap installed before the exclusions existed: documentation but the copyrights,
    # manuals, translations; then the downloaded packages and lists, which apt fetches again.
    for package in (root / "usr/share/doc").iterdir():
        for item in package.iterdir() if package.is_dir() and not package.is_symlink() else ():
            if item.name != "copyright":
                _remove(item)
    for pattern in ("usr/share/man/*", "usr/share/info/*", "usr/share/locale/*", "var/cache/apt/archives/*.deb",
                    "var/cache/apt/*.bin", "var/lib/apt/lists/*", "etc/machine-id", "etc/hostname"):
        for path in root.glob(pattern):
            if path.name != "locale.alias":
                _remove(path)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
