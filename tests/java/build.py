"""Fetch Paimon Java 0.9.0 and compile the oracle driver; a fast no-op when up to date.

Paimon's Java core ships inside PyPI's *source* distribution of ``pypaimon==0.2.0``
(``deps/jars/paimon-python-java-bridge-0.9.0.jar``: org.apache.paimon.* with Parquet, Avro and
Jackson shaded, plus Arrow Java). This module downloads that sdist with pip into the gitignored
``.cache/paimon-java/``, checks its pinned sha256, extracts the jar, finds the Hadoop / snappy / lz4
jars Paimon needs in the venv's ``pyspark/jars`` and compiles ``tests/java/src`` with ``javac``.
The compiled classes live in a directory keyed by a hash of the sources and the jar, so a change
to either rebuilds and an unchanged tree costs a few ``stat`` calls.

``python -m tests.java.build`` runs it from the command line (``make java-oracle``). Under
``CI=true`` a missing piece (no java/javac, no network for the sdist, no Hadoop jars) is an error;
elsewhere it is reported and the differential tests skip with that reason.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SRC_DIR = Path(__file__).resolve().parent / "src"
CACHE_DIR = Path(os.environ.get("PAIMON_JAVA_CACHE") or REPO_ROOT / ".cache" / "paimon-java")

PAIMON_JAVA_VERSION = "0.9.0"
SDIST_NAME = "pypaimon-0.2.0.tar.gz"
SDIST_REQUIREMENT = "pypaimon==0.2.0"
SDIST_SHA256 = "43ac684779841da17528b5f241ede6149bcdab4d16f3cd80f713262f6ed04720"
JAR_MEMBER = "pypaimon-0.2.0/deps/jars/paimon-python-java-bridge-0.9.0.jar"
JAR_NAME = f"paimon-bundle-{PAIMON_JAVA_VERSION}.jar"

# Jars Paimon needs beside its bundle: Hadoop's shaded client (Paimon's FileIO and Parquet use
# Configuration / Path classes) and the native codecs. Prefixes, matched in pyspark/jars.
# rocksdbjni: the RocksDB state of Paimon's cross-partition key index (GlobalIndexAssigner).
EXTRA_JAR_PREFIXES = ("hadoop-client-api-", "hadoop-client-runtime-", "snappy-java-", "lz4-java-", "rocksdbjni-")

MAIN_CLASS = "lakeoracle.PaimonOracle"

# Arrow Java and Paimon's memory segments reach into java.nio internals; Java 17 refuses without these.
JVM_OPENS = (
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
)


class JavaOracleUnavailable(RuntimeError):
    """A piece the oracle needs is missing; the message says which and how to get it."""


def ci() -> bool:
    """True when ``CI`` is set to anything but a false-ish value (then missing pieces fail the run)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@dataclass(frozen=True)
class OracleBuild:
    """What it takes to start the oracle JVM."""

    java: str
    classpath: tuple[str, ...]
    main_class: str = MAIN_CLASS

    def command(self, *jvm_args: str) -> list[str]:
        """The ``java`` command line that starts the oracle."""
        return [self.java, *JVM_OPENS, *jvm_args, "-cp", os.pathsep.join(self.classpath), self.main_class]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _tool(name: str) -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / name).is_file():
        return str(Path(home) / "bin" / name)
    found = shutil.which(name)
    if not found:
        raise JavaOracleUnavailable(f"`{name}` not found on PATH (install a JDK 17, e.g. Debian's openjdk-17-jdk)")
    return found


def _fetch_sdist() -> Path:
    """The verified sdist, downloaded with pip when absent or corrupt."""
    sdist = CACHE_DIR / SDIST_NAME
    if sdist.is_file() and _sha256(sdist) == SDIST_SHA256:
        return sdist
    sdist.unlink(missing_ok=True)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CACHE_DIR) as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
               "--disable-pip-version-check", "-q", "-d", tmp, SDIST_REQUIREMENT]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        got = Path(tmp) / SDIST_NAME
        if proc.returncode != 0 or not got.is_file():
            raise JavaOracleUnavailable(
                f"could not download {SDIST_REQUIREMENT} (Paimon Java {PAIMON_JAVA_VERSION}) with pip:\n"
                f"{proc.stderr.strip()[-2000:]}"
            )
        actual = _sha256(got)
        if actual != SDIST_SHA256:
            raise JavaOracleUnavailable(f"{SDIST_NAME} has sha256 {actual}, expected the pinned {SDIST_SHA256}")
        os.replace(got, sdist)
    return sdist


def _paimon_jar() -> Path:
    """Paimon's bundled jar, extracted from the verified sdist (extracted once, atomically)."""
    jar = CACHE_DIR / JAR_NAME
    if jar.is_file():
        return jar
    sdist = _fetch_sdist()
    with tarfile.open(sdist, "r:gz") as tar:
        member = tar.getmember(JAR_MEMBER)
        src = tar.extractfile(member)
        if src is None:
            raise JavaOracleUnavailable(f"{SDIST_NAME} has no file {JAR_MEMBER}")
        tmp = jar.with_suffix(".part")
        with src, tmp.open("wb") as dst:
            shutil.copyfileobj(src, dst)
    os.replace(tmp, jar)
    return jar


def _pyspark_jars_dir() -> Path:
    override = os.environ.get("PAIMON_JAVA_HADOOP_JARS")
    if override:
        return Path(override)
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise JavaOracleUnavailable("pyspark is not installed in this venv; its jars/ provides Hadoop for Paimon")
    return Path(next(iter(spec.submodule_search_locations))) / "jars"


def _extra_jars() -> list[Path]:
    jars_dir = _pyspark_jars_dir()
    found = []
    for prefix in EXTRA_JAR_PREFIXES:
        matches = sorted(jars_dir.glob(f"{prefix}*.jar"))
        if not matches:
            raise JavaOracleUnavailable(f"no {prefix}*.jar in {jars_dir} (Paimon needs it)")
        found.append(matches[-1])
    return found


def _sources() -> list[Path]:
    return sorted(SRC_DIR.rglob("*.java"))


_STALE_BUILD_SECONDS = 24 * 3600


def _compile(javac: str, jar: Path, sources: list[Path], extra: list[Path]) -> Path:
    """Compile the driver into a directory keyed by the sources and the jar; reuse it when present."""
    key = hashlib.sha256()
    key.update(JAR_NAME.encode())
    key.update(str(jar.stat().st_size).encode())
    for src in sources:
        key.update(str(src.relative_to(SRC_DIR)).encode())
        key.update(src.read_bytes())
    out = CACHE_DIR / f"classes-{key.hexdigest()[:16]}"
    if (out / ".complete").is_file():
        os.utime(out)  # in use: not stale for another day
        return out
    tmp = Path(tempfile.mkdtemp(prefix="classes-", dir=CACHE_DIR))
    classpath = os.pathsep.join(str(p) for p in [jar, *extra])
    cmd = [javac, "-nowarn", "-encoding", "UTF-8", "--release", "17", "-cp", classpath, "-d", str(tmp),
           *map(str, sources)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        # A compile error is a bug in this repository, never a reason to skip.
        raise RuntimeError(f"javac failed on tests/java/src:\n{proc.stdout}\n{proc.stderr}")
    (tmp / ".complete").write_text("ok\n")
    # Other builds may be in use by test runs of other checkouts sharing PAIMON_JAVA_CACHE (their JVMs
    # load classes lazily, so removing their directory fails them mid-test): only builds untouched for
    # a day are stale.
    cutoff = time.time() - _STALE_BUILD_SECONDS
    for stale in CACHE_DIR.glob("classes-*"):
        if stale not in (tmp, out) and stale.stat().st_mtime < cutoff:
            shutil.rmtree(stale, ignore_errors=True)
    if out.exists():  # a concurrent build won: use its result
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        os.replace(tmp, out)
    return out


def ensure_built() -> OracleBuild:
    """Fetch, verify and compile as needed; raise JavaOracleUnavailable naming what is missing."""
    java = _tool("java")
    javac = _tool("javac")
    jar = _paimon_jar()
    extra = _extra_jars()
    classes = _compile(javac, jar, _sources(), extra)
    return OracleBuild(java=java, classpath=(str(classes), str(jar), *map(str, extra)))


def main() -> int:
    """Command line: build; missing pieces are errors under CI and notes elsewhere."""
    try:
        build = ensure_built()
    except JavaOracleUnavailable as exc:
        if ci():
            print(f"error: Paimon Java oracle unavailable: {exc}", file=sys.stderr)
            return 1
        print(f"note: Paimon Java oracle unavailable ({exc}); differential tests will skip", file=sys.stderr)
        return 0
    print(f"Paimon Java {PAIMON_JAVA_VERSION} oracle ready: {build.classpath[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
