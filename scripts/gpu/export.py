"""On the device, after a run: the store's tables as a few flat files under $OUT (what comes back).

The store's tree is too deep and too many files for the device tool's return
(8 files, 2 folders down), so this writes: cells.parquet (every ok attempt's
summary row), requests.parquet (every stored request: measured and warm-up, by `phase`), sessions.json, and
engine_logs.txt (the tail and CUDA-graph tables of every engine log).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from store.read import connect, has_view

WORDS = ("CUDAGraph", "Mode:", "Capture sizes", "kpad", "dynk", "Error", "error")


def main(store: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    con = connect(store)
    for view in ("cells", "requests"):
        if has_view(con, view):
            con.execute(f"COPY (SELECT * FROM {view}) TO '{out / (view + '.parquet')}' (FORMAT parquet)")
    if has_view(con, "sessions"):
        (out / "sessions.json").write_text(
            con.execute("SELECT * FROM sessions").df().to_json(orient="records", date_format="iso")
        )
    with (out / "engine_logs.txt").open("w") as sink:
        for log in sorted(store.glob("logs/*/*.log")):
            lines = log.read_text(errors="replace").splitlines()
            keep = [ln for ln in lines if "|" in ln or any(word in ln for word in WORDS)]
            kept = [*lines[:40], "...", *keep[-400:], "...", *lines[-60:]]
            sink.write(f"==> {log.name} ({len(lines)} lines)\n" + "\n".join(kept) + "\n")
    print(json.dumps(sorted(p.name for p in out.iterdir())))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
