"""The end of a benchmark script's ``main``, shared by the scripts that print a Markdown
table of their results (run from ``benchmarks/``)."""

from __future__ import annotations

import json


def run_or_table(args, run, table) -> None:
    """With ``--table FILE``, print the table of that saved result; else ``run(args)``,
    write the result to ``--out`` (when given, its folder made) and print its table."""
    if args.table is not None:
        print(table(json.loads(args.table.read_text())))
        return
    result = run(args)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))
    print(table(result))
