from grid.config.compose import compose_config
from grid.config.expand import expand, to_config
from grid.plan.groups import group_by_engine
from workers.launch import missing_plugin


def spec(lever, *overrides):
    config = to_config(compose_config(["experiment=smoke", f"grid.levers=[{lever}]", *overrides]))
    return group_by_engine(expand(config))[0]


def test_a_lever_whose_plugin_did_not_load_is_caught_from_the_engine_log(tmp_path):
    log = tmp_path / "engine.log"
    log.write_text("INFO plugins loaded\nERROR Failed to load plugin kpad\n")
    reason = missing_plugin(spec("bestkpad"), log)
    assert reason is not None and "'kpad'" in reason and "pip install -e ." in reason
    log.write_text("INFO lever_plugins kpad: wrapped suffix_decoding.SuffixDecodingProposer.propose\n")
    assert missing_plugin(spec("bestkpad"), log) is None


def test_levers_without_a_plugin_need_nothing(tmp_path):
    assert missing_plugin(spec("suffix"), tmp_path / "absent.log") is None


def test_a_shared_launch_needs_the_switch_whatever_its_first_lever(tmp_path):
    log = tmp_path / "engine.log"
    log.write_text("INFO lever_plugins kpad: wrapped suffix_decoding.SuffixDecodingProposer.propose\n")
    shared = spec("suffix,bestkpad", "+grid.ks.bestkpad=[8]", "grid.engine_reuse=shared")
    assert shared.levers == ("suffix", "bestkpad")
    reason = missing_plugin(shared, log)
    assert reason is not None and "'switch'" in reason
    log.write_text("INFO lever_plugins switch: wrapped suffix_decoding.SuffixDecodingProposer.propose\n")
    assert missing_plugin(shared, log) is None
