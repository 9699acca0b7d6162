"""`python -m analysis.power --store`: van's and the lever's sigmas measured in the store, said so."""

import pytest

from analysis.load import measured_cells
from analysis.power import SIGMA_LEVER, SIGMA_VAN, main
from analysis.variance import variance_components
from store.read import connect
from tests.unit.analysis.launch_store import Design, write_store


def run(capsys, *args):
    assert main(["--draws", "200", "--max-n", "3", *args]) == 0
    return capsys.readouterr().out


def test_the_store_s_per_run_sigmas_replace_the_defaults(tmp_path, capsys):
    store = write_store(tmp_path / "store", Design(sessions=2, launches=3, blocks=4, sd_launch=0.12))
    table = variance_components(measured_cells(connect(store))).set_index("lever")
    van, lever = table.loc["van", "sd_run"], table.loc[["suffix", "bestkpad", "dynk"], "sd_run"].max()
    assert van != pytest.approx(SIGMA_VAN, abs=0.002) and lever != pytest.approx(SIGMA_LEVER, abs=0.002)
    text = run(capsys, "--store", str(store))
    assert f"van sigma: {van:.1%} measured: smol van per-run sd, n=24 blocks on 6 launches" in text
    assert f"lever sigma: {lever:.1%} measured" in text and "(the largest of its drafting" in text
    assert f"noise: van {van:.1%}, lever {lever:.1%} run to run" in text
    chosen = run(capsys, "--store", str(store), "--lever", "dynk-k8", "--model", "smol")
    assert f"lever sigma: {table.loc['dynk', 'sd_run']:.1%} measured: smol dynk-k8" in chosen


def test_figures_the_store_cannot_measure_keep_their_defaults_and_say_why(tmp_path, capsys):
    store = write_store(tmp_path / "one", Design(sessions=1, launches=1, blocks=6))
    text = run(capsys, "--store", str(store))
    assert f"van sigma: default {SIGMA_VAN:.1%} (--sigma-van): not measurable (" in text
    assert "one launch per session" in text
    assert f"noise: van {SIGMA_VAN:.1%}, lever {SIGMA_LEVER:.1%} run to run" in text


def test_a_store_of_several_models_needs_model(tmp_path, capsys):
    store = write_store(tmp_path / "two", Design(sessions=1, launches=2, blocks=3))
    write_store(store, Design(sessions=1, launches=2, blocks=3, model="other"), seed=1, first=100)
    with pytest.raises(SystemExit):
        main(["--store", str(store), "--draws", "10"])
    assert "--model NAME" in capsys.readouterr().err
