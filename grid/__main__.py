"""Command line: `python -m grid <command> [hydra overrides]`.

run      run the grid (default experiment: smoke) and print the summary table
status   done / invalid / failed / interrupted / damaged / pending cells, from the store; every file's
         size and sha256 checked against its manifest (--quick: sizes only)
plan     print cells, engine launches, GPU bundles and GPU-hours (format=json for JSON)
summary  print the summary table of the store
corpus   list the corpora with their sizes and prompt-length percentiles (format=json for JSON)
report   write <store>/reports/<experiment>.html: Table 1, best K, drift, figures (one page)
"""

from __future__ import annotations

import sys

from vocab.errors import GridError

USAGE = (
    "usage: python -m grid {run,status,plan,simulate,summary,corpus,report} [key=value ...]"
    "  (e.g. experiment=smoke; status --quick)\n"
    "your own config folders: hydra.searchpath=[file:///my/conf] or LEVER_GRID_CONF=/my/conf[:/other];"
    " your own corpus in one line: grid.corpora=[mine] +corpus.mine.path=/data/trace.jsonl"
)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__ + "\n" + USAGE)
        return 0 if argv else 2
    command, overrides = argv[0], argv[1:]
    try:
        if command == "run":
            from grid.run import run

            return run(overrides)
        if command == "status":
            from grid.status import status

            quick = "--quick" in overrides
            return status([o for o in overrides if o != "--quick"], checksums=not quick)
        if command == "simulate":
            from grid.plan_report import simulate_plan

            simulate_plan(overrides)
            return 0
        if command == "plan":
            from grid.plan_report import plan

            return plan(overrides)
        if command == "corpus":
            from grid.corpus_report import corpus

            return corpus(overrides)
        if command == "report":
            from grid.report import report

            return report(overrides)
        if command == "summary":
            from analysis.summary import latest_cells, render
            from grid.compose import check_run_mode, compose_config
            from vocab.paths import store_path

            cfg = compose_config(overrides)
            check_run_mode(cfg)
            paths = cfg.paths
            render(latest_cells(store_path(paths.store, paths.get("store_options"))))
            return 0
    except GridError as exc:
        from store.fs import redact  # pyarrow: only on this path, not for every command's start

        # The last stop before the terminal: no message shows a store URL's credentials.
        print(f"error: {redact(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Before any launch (a run's launch handles its own signals): nothing to stop or record.
        print("interrupted before anything was launched", file=sys.stderr)
        return 130
    print(f"error: unknown command '{command}'\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
