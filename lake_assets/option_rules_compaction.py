"""Registry rows of the options that say when and how compaction runs: sorted-run triggers,
levels, size amplification and ratios, append compaction of small files, deletion-vector rewrites,
forced full compactions and the bounds of a compaction's memory. `lake_assets.option_rules` merges
them into the registry in their place.
"""

from __future__ import annotations

from lake_assets.option_types import OptionRule

R = OptionRule
COMPACTION_RULES: dict[str, OptionRule] = {r.key: r for r in (
    R("num-sorted-run.compaction-trigger", "int", 5, "Sorted runs that trigger a compaction.", minimum=1),
    R("num-sorted-run.stop-trigger", "int", None, "Sorted runs that stop writes (compaction-trigger + 3).",
      minimum=1, note="accepted; lake_assets writers compact level 0 at every commit unless write-only, "
      "so runs never pile up behind a writer"),
    R("num-levels", "int", None, "LSM levels (compaction-trigger + 1).", minimum=2),
    R("compaction.max-size-amplification-percent", "int", 200, "Size amplification that triggers a full "
      "compaction.", minimum=0),
    R("compaction.size-ratio", "int", 1, "Percentage flexibility of the size ratio of universal compaction.",
      minimum=0),
    R("compaction.small-file-ratio", "ratio", 0.7, "Files below this share of target-file-size are small "
      "(append compaction)."),
    R("compaction.min.file-num", "int", 5, "Small files that trigger an append compaction.", minimum=1),
    R("compaction.max.file-num", "int", None, "Files an append compaction merges at most in one unit, and "
      "merges even when smaller than target-file-size together (fixed bucket: 5; unaware bucket: no cap).",
      minimum=1, fallback_keys=("compaction.early-max.file-num",),
      note="fixed-bucket append tables (bucket = N) compact by it as Paimon's BucketedAppendCompactManager; "
      "unaware-bucket append tables (bucket = -1) as Paimon 0.9-1.0's UnawareAppendTableCompactionCoordinator "
      "(a group of small files closes at that many files, also below compaction.min.file-num; Java's "
      "default there is 50, lake_assets' none, as Paimon 1.1+, which dropped the option); data-evolution "
      "and primary-key tables ignore it, as Paimon"),
    R("compaction.force-up-level-0", "bool", False, "Compaction always picks level 0 up."),
    R("compaction.delete-ratio-threshold", "ratio", 0.2, "Files whose deletion vector hides this share of "
      "their rows are rewritten by compaction.", note="lake_assets applies it to deletion-vector primary-key "
      "tables and, as Paimon 1.x, to unaware-bucket append tables; fixed-bucket append tables have no delete "
      "ratio (Paimon's BucketedAppendCompactManager, 0.9 to HEAD)"),
    R("full-compaction.delta-commits", "int", None, "Commits between forced full compactions.", minimum=1),
    R("compaction.parallelism", "int", None, "Compaction units run at once in one process (lake_assets only; "
      "Paimon engines ignore it).", minimum=1, lake_assets_only=True),
    R("compaction.merge-rows", "int", None, "Rows a compaction unit gathers per merge step (lake_assets "
      "only; default 262144; Paimon engines ignore it): a unit holds at most about twice this many input "
      "rows and their merged rows, plus one read batch per sorted run (read.batch-size, less when many "
      "runs share this bound; of an ORC file a stripe, see orc.stripe.size), and compaction.parallelism "
      "units run at once.", minimum=1,
      lake_assets_only=True),
    R("sort-spill-threshold", "int", None, "Sorted runs a compaction merge reads at once "
      "(num-sorted-run.stop-trigger + 1, as Paimon); more are first merged at most this many at a time "
      "into local spill files (spill-compression, within write-buffer-spill.max-disk-size).", minimum=2,
      note="applies to compaction; reads bound their memory by read.batch-size and read.read-ahead"),
)}
del R
