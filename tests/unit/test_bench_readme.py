"""Every bench and profile script is listed in bench/README.md, so a reader of RESULTS.md can find
what a script measures and how it is run."""

from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_every_bench_script_is_listed_in_the_bench_readme() -> None:
    listed = (BENCH / "README.md").read_text(encoding="utf-8")
    scripts = sorted(p.name for p in BENCH.glob("*.py") if p.name.startswith(("bench_", "profile_")))
    assert scripts, "no bench scripts found"
    assert [name for name in scripts if f"bench/{name}" not in listed] == []
