"""Does a corpus measure differently when another corpus ran before it on the same engine?

Suffix decoding keeps a tree of recent outputs across requests, so an engine
that served corpus A first may draft differently for corpus B. Three grid
runs of the suffix lever on the real CPU engine, one store:

  fresh      grid.engine_reuse=per_corpus: each corpus on its own engine
  A then B   per_spec, corpora [code_complete, chat_bench]
  B then A   per_spec, corpora [chat_bench, code_complete]

For each corpus it prints acceptance rate, draft tokens per draft and output
tok/s fresh and after the other corpus, and their ratio. Greedy float32
decoding on CPU makes acceptance repeatable, so an acceptance change is the
tree's doing; throughput is noisier (about 15% run to run on this machine).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from rich.console import Console

from grid.orchestrate.drive import drive
from store.read import connect

CORPORA = ["code_complete", "chat_bench"]
LOAD = os.environ.get("REUSE_LOAD", "load.num_prompts=24").split()


def overrides(store: Path, session: str, *extra: str) -> list[str]:
    return [
        "experiment=smoke",
        f"paths.store={store}",
        f"session_id={session}",
        "grid.levers=[suffix]",
        "grid.anchor.enabled=false",
        "run.mode=all",
        *LOAD,
        *extra,
    ]


def main() -> None:
    console = Console(file=sys.stderr, width=160)
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        runs = {
            "fresh": ["grid.engine_reuse=per_corpus", f"grid.corpora=[{','.join(CORPORA)}]"],
            "ab": [f"grid.corpora=[{','.join(CORPORA)}]"],
            "ba": [f"grid.corpora=[{','.join(reversed(CORPORA))}]"],
        }
        for session, extra in runs.items():
            if drive(overrides(store, session, *extra), console) != 0:
                raise SystemExit(f"the {session} run failed; see the log above")
        cells = (
            connect(store)
            .execute(
                "SELECT session_id, corpus, engine_earlier_corpora, acceptance_rate, draft_tokens_per_draft, "
                "output_tok_per_s FROM cells"
            )
            .df()
        )
    print(f"{'corpus':<14} {'ran after':<14} {'acceptance':>10} {'tok/draft':>9} {'tok/s':>7}")
    for corpus in CORPORA:
        fresh = cells[(cells["corpus"] == corpus) & cells["engine_earlier_corpora"].isna()]
        fresh = fresh[fresh["session_id"] == "fresh"].iloc[0]
        after = cells[(cells["corpus"] == corpus) & cells["engine_earlier_corpora"].notna()].iloc[0]
        for label, row in (("-", fresh), (after["engine_earlier_corpora"], after)):
            print(
                f"{corpus:<14} {label:<14} {row['acceptance_rate']:>10.3f} "
                f"{row['draft_tokens_per_draft']:>9.2f} {row['output_tok_per_s']:>7.1f}"
            )
        ratio = {name: after[name] / fresh[name] for name in ("acceptance_rate", "draft_tokens_per_draft",
                                                               "output_tok_per_s")}  # fmt: skip
        print(
            f"{corpus:<14} {'after / fresh':<14} {ratio['acceptance_rate']:>10.3f} "
            f"{ratio['draft_tokens_per_draft']:>9.3f} {ratio['output_tok_per_s']:>7.3f}"
        )


if __name__ == "__main__":
    main()
