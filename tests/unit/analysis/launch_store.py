"""Cells with engine launches and blocks, drawn with KNOWN variance components, as frames or a store.

ln tok/s = ln base[corpus] + ln ratio[lever] + u_session + u_launch + e_block (+ e_lever per cell)
  u_session ~ N(0, sd_session^2), u_launch ~ N(0, sd_launch^2), e_block ~ N(0, sd_block^2).
Levers in `shared` run on one launch and see the same u_launch and e_block in a block (the same
prompts), each with its own small e_lever; so a ratio inside a block is ratio[lever] / ratio[ref]
times exp(e_lever - e_lever'). van runs on launches of its own, with its own draws.

Inside a block the levers run in ABBA order (grid/config/expand.py's shared_blocks: `shared`'s order in
even blocks, reversed in odd ones), recorded as engine_cell_index. Options, all off by default:
  sd_lever_launch  a lever x launch interaction: every lever but shared[0] draws its own
                   N(0, sd^2) per launch, so its ratio over shared[0] moves launch to launch
  carry            a one-sided carry-over: the cell run right after shared[0] gains exp(carry)
  period           a period effect: a cell at position p of its block gains exp(p * period)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from store.layout import StoreLayout
from tests.unit.analysis.synthetic_store import write_cell

BASE = {"chat": 100.0, "code": 400.0, "mix": 40.0}


@dataclass(frozen=True)
class Design:
    sessions: int = 2
    launches: int = 3  # per session, per launch configuration
    blocks: int = 4  # per launch
    sd_block: float = 0.02
    sd_launch: float = 0.08
    sd_session: float = 0.03
    sd_lever: float = 0.005  # per cell, inside a block
    shared: tuple[tuple[str, int, float], ...] = (
        ("suffix", 8, 1.0),
        ("bestkpad", 8, 1.10),
        ("dynk", 8, 1.05),
    )
    van: bool = True
    corpora: tuple[str, ...] = ("chat", "code", "mix")
    model: str = "smol"
    block_column: bool = True
    sd_lever_launch: float = 0.0
    carry: float = 0.0
    period: float = 0.0


def cells_frame(design: Design = Design(), seed: int = 0) -> pd.DataFrame:
    """One row per cell as analysis.load.measured_cells gives them (VALID, no anchors)."""
    rng = np.random.default_rng(seed)
    rows = []
    groups = [design.shared] + ([(("van", 0, 1.0),)] if design.van else [])
    for s in range(design.sessions):
        session = f"2026010{s % 10}T{s:06d}Z-{s:06x}"
        u_session = rng.normal(0, design.sd_session)
        for g, levers in enumerate(groups):
            for launch in range(design.launches):
                u_launch = rng.normal(0, design.sd_launch)
                # Drawn only when asked for, so the default designs keep their draws.
                u_lever = {}
                if design.sd_lever_launch:
                    u_lever = {lv: rng.normal(0, design.sd_lever_launch) for lv, _, _ in levers[1:]}
                position = 0
                for block in range(design.blocks):
                    corpus = design.corpora[block % len(design.corpora)]
                    e_block = rng.normal(0, design.sd_block)
                    order = [lv for lv, _, _ in (levers if block % 2 == 0 else levers[::-1])]
                    for lever, k, ratio in levers:
                        noise = u_session + u_launch + e_block + rng.normal(0, design.sd_lever)
                        at = order.index(lever)
                        after_first = at > 0 and order[at - 1] == levers[0][0]
                        noise += u_lever.get(lever, 0.0) + at * design.period + after_first * design.carry
                        row = {
                            "session_id": session,
                            "cell_key": f"{design.model}-s{s}g{g}l{launch}b{block}-{lever}",
                            "engine_launch_id": f"e{g}-{launch}",
                            "engine_cell_index": position + at,
                            "model": design.model,
                            "corpus": corpus,
                            "lever": lever,
                            "k": k,
                            "repeat": block,
                            "output_tok_per_s": BASE[corpus] * ratio * float(np.exp(noise)),
                            "valid": True,
                        }
                        if design.block_column:
                            row["block"] = block
                        rows.append(row)
                    position += len(levers)
    return pd.DataFrame(rows)


def write_store(root, design: Design = Design(), seed: int = 0, first: int = 0):
    """cells_frame's cells written through store.writer, one ok attempt each; returns `root`.

    `first`: the first attempt number (another design written into the same store needs its own)."""
    layout = StoreLayout(root)
    frame = cells_frame(design, seed)
    for n, row in enumerate(frame.to_dict("records"), start=first):
        summary = {k: v for k, v in row.items() if k not in ("session_id", "cell_key", "valid")}
        write_cell(layout, row["session_id"], n, row["cell_key"], summary)
    return root
