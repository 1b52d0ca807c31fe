"""Directory listings while other processes create and remove files next to what is listed.

Tags, snapshots and consumers are found by listing; a listing that loses entries because a
neighbour vanished mid-listing makes expiry see no tags (and delete what they keep).
"""

from __future__ import annotations

import os
import threading

from lake_assets.io.file_io import FileIO


def test_a_vanishing_neighbour_never_hides_the_other_entries(tmp_path):
    fio, root = FileIO.for_url(str(tmp_path))
    tag_dir = f"{root}/tag"
    os.makedirs(tag_dir)
    for i in range(3):
        (tmp_path / "tag" / f"tag-keep{i}").write_text("{}")
    stop = threading.Event()

    def churn(n: int) -> None:
        # what put-if-absent does next door: a temporary file appears and is unlinked again
        i = 0
        while not stop.is_set():
            p = tmp_path / "tag" / f".tag-new.{n}.{i}.tmp"
            p.write_bytes(b"x")
            p.unlink()
            i += 1

    threads = [threading.Thread(target=churn, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    try:
        short = [names for names in (fio.list_names(tag_dir) for _ in range(3000))
                 if not {"tag-keep0", "tag-keep1", "tag-keep2"} <= set(names)]
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert short == []
