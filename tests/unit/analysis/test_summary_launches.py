"""The summary shows the variance components and the paired-by-block table where cells record launches."""

import io
import json

import pytest
from rich.console import Console

from analysis.summary import export, latest_cells, render
from analysis.variance import variance_components
from tests.unit.analysis.launch_store import Design, write_store
from tests.unit.analysis.synthetic_store import build_store


@pytest.fixture(scope="module")
def launch_store(tmp_path_factory):
    return write_store(tmp_path_factory.mktemp("launches") / "store")


def rendered(store, width=250):
    out = io.StringIO()
    render(latest_cells(store), Console(file=out, width=width))
    return out.getvalue()


def test_summary_shows_the_components_per_model_and_lever_with_their_df(launch_store):
    text = rendered(launch_store)
    assert "variance components of smol: ln out tok/s" in text
    assert "engine sd% (df)" in text and "session sd% (df)" in text and "missing because" in text
    van = variance_components(latest_cells(launch_store)).set_index("lever").loc["van"]
    # 24 blocks of 3 corpora on 6 launches in 2 sessions: df 24 - 3 - 1 - 4, 4, 1
    assert f"{van['sd_block']:.1%} (16)" in text and f"{van['sd_launch']:.1%} (4)" in text
    assert f"{van['sd_session']:.1%} (1)" in text and "24/6/2" in text
    assert "paired by block, smol (levers sharing a launch)" in text
    assert "bestkpad-k8 / suffix-k8" in text and "1.10" in text


def test_an_old_store_prints_no_such_table_and_exports_as_before(tmp_path):
    store = build_store(tmp_path / "old")
    assert "variance components" not in rendered(store) and "paired by block" not in rendered(store)
    out = io.StringIO()
    export(latest_cells(store), "json", out)
    assert set(json.loads(out.getvalue())) == {"cells", "left_out"}


def test_one_launch_shows_the_missing_components_and_why(tmp_path):
    store = write_store(tmp_path / "one", Design(sessions=1, launches=1, blocks=6))
    text = rendered(store)
    assert "one launch per session" in text and "one session" in text


def test_json_and_md_carry_both_tables(launch_store):
    out = io.StringIO()
    export(latest_cells(launch_store), "json", out)
    document = json.loads(out.getvalue())
    assert {row["lever"] for row in document["variance_components"]} == {"van", "suffix", "bestkpad", "dynk"}
    (pair,) = [
        r
        for r in document["paired_by_block"]
        if r["lever"] == "bestkpad-k8" and r["reference"] == "suffix-k8"
    ]
    assert pair["ci_lo"] < 1.10 < pair["ci_hi"] and pair["n_blocks"] == 24
    md = io.StringIO()
    export(latest_cells(launch_store), "md", md)
    assert "| model | lever | K | within-engine sd % (df) |" in md.getvalue()
    assert "| bestkpad-k8 / suffix-k8 |" in md.getvalue().replace(
        "| smol | suffix-k8+bestkpad-k8+dynk-k8 ", ""
    )
