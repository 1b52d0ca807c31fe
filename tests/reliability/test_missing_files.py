"""FileIO.missing on S3 (moto on loopback): the commit's existence check of the files it adds."""

from __future__ import annotations

from lake_assets.io.file_io import FileIO


def test_missing_reports_exactly_the_absent_files_by_listing_and_by_lookup(s3_warehouse):
    wh, opts = s3_warehouse
    fio, root = FileIO.for_url(wh, **opts)
    many = [f"{root}/bucket-0/data-{i}.parquet" for i in range(10)]  # listed: one request
    few = [f"{root}/bucket-1/data-{i}.parquet" for i in range(3)]  # looked up one by one
    for p in many + few:
        fio.write_bytes(p, b"x")
    # a neighbour whose name extends a checked one must not stand in for it
    fio.write_bytes(f"{root}/bucket-0/data-10.parquet.tmp", b"x")
    gone = [many[3], many[7], few[1]]
    fio.delete_many(gone)
    absent = [f"{root}/bucket-2/data-0.parquet"]  # a directory that does not exist at all
    assert sorted(fio.missing(many + few + absent)) == sorted(gone + absent)
    assert fio.missing([]) == []
