"""What a branch costs expiry and orphan removal of the main branch.

    .venv/bin/python bench/bench_branch_maintenance.py [--commits 300] [--buckets 4] [--rows 2000]
        [--rounds 5] [--profile]

One primary-key table (``--buckets`` buckets, a full compaction every 10 commits) gets ``--commits``
commits of ``--rows`` rows; it is tagged at a third of its history and copied twice: the *plain*
copy as it is, the *branched* copy with a branch made from that tag as Paimon's
``createBranch(name, tag)`` makes it (the tag's, its snapshot's and its schema's files copied into
``branch/branch-dev``) and the tag deleted (so the branch alone keeps the tagged snapshot's files:
the case where lake_assets reads the branch's references and keeps what they name).

Each round takes a fresh copy of each (interleaved: plain, branched, then branched, plain), runs a
dry-run orphan removal on it (the whole history: every snapshot's references are read), then
expires all but the latest snapshot (no ``snapshot.expire.limit``), and records the process CPU
time of each call. The ratio branched / plain is the price of the branch
(reading every manifest its snapshot names). After each branched expiry every file the branch's
snapshot names must exist, and the plain expiry must have deleted some of them (exit status 1
otherwise): the branch, not chance, kept them.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))  # run as `python bench/bench_branch_maintenance.py` from a checkout

from lake_assets import Catalog  # noqa: E402
from lake_assets.ops.orphans import referenced_files  # noqa: E402
from lake_assets.table import Table  # noqa: E402

EVERYTHING = datetime.now() + timedelta(days=1)


def build(root: Path, commits: int, buckets: int, rows: int) -> int:
    """The table and its history; returns the tagged snapshot's id."""
    cat = Catalog(str(root))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_keys=["id"],
                         options={"bucket": str(buckets), "full-compaction.delta-commits": "10"})
    tagged = 0
    for i in range(commits):
        ids = pa.array(range(i * rows // 2, i * rows // 2 + rows), pa.int64())
        t.write_arrow(pa.table({"id": ids, "v": pa.array([f"v{i}"] * rows)}))
        if i == commits // 3:
            tagged = t.create_tag("base").snapshot.id
    return tagged


def add_branch(table_dir: Path, tagged: int) -> None:
    """Paimon's createBranch("dev", "base"), then the main tag deleted (its files stay)."""
    branch = table_dir / "branch" / "branch-dev"
    for sub in ("schema", "snapshot", "tag"):
        (branch / sub).mkdir(parents=True)
    tag = table_dir / "tag" / "tag-base"
    shutil.copyfile(tag, branch / "tag" / "tag-base")
    shutil.copyfile(tag, branch / "snapshot" / f"snapshot-{tagged}")
    shutil.copyfile(table_dir / "schema" / "schema-0", branch / "schema" / "schema-0")
    tag.unlink()


def branch_files(t: Table) -> set[str]:
    return referenced_files(t.store, main=False)


def timed(fn) -> tuple[float, object]:
    start = time.process_time()
    out = fn()
    return time.process_time() - start, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commits", type=int, default=300)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="profile one branched expiry (top 15 by cumtime)")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-branch-"))
    try:
        base = work / "base"
        t0 = time.perf_counter()
        tagged = build(base, args.commits, args.buckets, args.rows)
        built_s = time.perf_counter() - t0
        branched_base = work / "branched-base"
        shutil.copytree(base, branched_base)
        add_branch(branched_base / "db.db" / "t", tagged)
        plain_base = work / "plain-base"
        shutil.copytree(base, plain_base)
        (plain_base / "db.db" / "t" / "tag" / "tag-base").unlink()  # the same table without the branch
        kept = branch_files(Catalog(str(branched_base)).get_table("db.t"))
        cpu: dict[str, list[float]] = {"expire plain": [], "expire branched": [], "orphans plain": [],
                                       "orphans branched": []}
        ok = True
        deleted_by_plain = 0
        for r in range(args.rounds):
            order = ["plain", "branched"] if r % 2 == 0 else ["branched", "plain"]
            for kind in order:
                copy = work / f"{kind}-{r}"
                shutil.copytree(plain_base if kind == "plain" else branched_base, copy)
                os.sync()
                t = Catalog(str(copy)).get_table("db.t")
                # orphan removal first, on the whole history: every snapshot's references are read
                seconds, _ = timed(lambda t=t: t.remove_orphan_files(older_than=timedelta(0), dry_run=True))
                cpu[f"orphans {kind}"].append(seconds)
                if args.profile and kind == "branched" and r == 0:
                    prof = cProfile.Profile()
                    prof.enable()
                seconds, _ = timed(lambda t=t: t.expire_snapshots(retain_min=1, retain_max=1, older_than=EVERYTHING,
                                                                  limit=10 * args.commits))
                if args.profile and kind == "branched" and r == 0:
                    prof.disable()
                    pstats.Stats(prof).sort_stats("cumulative").print_stats(15)
                cpu[f"expire {kind}"].append(seconds)
                missing = [p for p in kept if not os.path.exists(p.replace(str(branched_base), str(copy)))]
                if kind == "branched" and missing:
                    print(f"FAIL: the branched expiry deleted {len(missing)} file(s) the branch names", file=sys.stderr)
                    ok = False
                if kind == "plain":
                    deleted_by_plain = len([p for p in kept
                                            if not os.path.exists(p.replace(str(branched_base), str(copy)))])
                shutil.rmtree(copy)
        if deleted_by_plain == 0:
            print("FAIL: without the branch the expiry deleted none of the branch's files", file=sys.stderr)
            ok = False
        med = {k: statistics.median(v) for k, v in cpu.items()}
        report = {
            "commits": args.commits, "buckets": args.buckets, "rows": args.rows, "rounds": args.rounds,
            "build_s": round(built_s, 1), "branch_files": len(kept), "deleted_without_branch": deleted_by_plain,
            "cpu_s_median": {k: round(v, 3) for k, v in med.items()},
            "expire_ratio_branched_over_plain": round(med["expire branched"] / med["expire plain"], 2),
            "orphans_ratio_branched_over_plain": round(med["orphans branched"] / med["orphans plain"], 2),
            "load_average": os.getloadavg(),
        }
        print(json.dumps(report, indent=2))
        return 0 if ok else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
