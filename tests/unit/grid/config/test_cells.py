import subprocess
import sys

from grid.config.compose import compose_config
from grid.config.expand import expand, to_config


def keys(*overrides):
    return [c.key for c in expand(to_config(compose_config(["experiment=smoke", *overrides])))]


def test_keys_are_unique_and_repeatable_in_process():
    first = keys()
    assert len(set(first)) == len(first)
    assert keys() == first


def test_keys_are_the_same_in_another_process():
    code = "from tests.unit.grid.config.test_cells import keys; print(','.join(keys()))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().split(",") == keys()


def test_result_affecting_fields_change_the_key():
    base = set(keys())
    for override in ("load.max_tokens=65", "load.concurrency=7", "engine.max_num_seqs=16", "load.seed=1"):
        assert base.isdisjoint(keys(override)), override


def test_timeouts_do_not_change_the_key():
    assert keys("engine.start_timeout_s=5") == keys()
