"""A stand-in for a Spark job that says what the test asks it to through each channel: the stdout
summary line and Dagster Pipes (the jobs' own `pipes_context`, `report_to_pipes` and `emit`, without
Spark), so that tests/dagster/test_pipes_channel.py can make the two disagree or fail one of them.

``python -m tests.dagster.stand_in_job --stdout '{json}' --pipes '{json}' --log text --warn text --exit N``
(`SparkJobResource`'s python launcher adds ``--master``). ``--stdout -`` prints no summary line;
without ``--pipes`` nothing is reported through Pipes (a summary's ``checks`` go as check results);
``--log`` goes to the Pipes log directly, ``--warn`` through the jobs' logger, each ``--message
'{json}'`` as a custom message; the exit code comes after all of them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from lake_assets.spark.jobs.logs import log
from lake_assets.spark.jobs.pipes import pipes_context, report_to_pipes
from lake_assets.spark.jobs.summary import emit


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--master")
    parser.add_argument("--stdout", default="-")
    parser.add_argument("--pipes")
    parser.add_argument("--log")
    parser.add_argument("--warn")
    parser.add_argument("--message", action="append", default=[])
    parser.add_argument("--exit", type=int, default=0)
    args = parser.parse_args(list(argv))
    with pipes_context() as pipes:
        assert pipes is not None, "the stand-in runs under Dagster Pipes only"
        if args.log:
            pipes.log.info(args.log)
        if args.warn:
            log.warning(args.warn)
        for message in args.message:
            pipes.report_custom_message(json.loads(message))
        if args.pipes:
            report_to_pipes(pipes, json.loads(args.pipes), None)
        if args.stdout != "-":
            emit(json.loads(args.stdout))
    return args.exit


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
