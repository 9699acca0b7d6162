import subprocess
import sys

from lever_plugins import env

CHECK_NOOP = """
import sys
from lever_plugins import dynk, kpad, switch
kpad.register()
dynk.register()
switch.register()
assert "vllm" not in sys.modules, "register() without its env var must not import vLLM"
assert "torch" not in sys.modules
"""


def test_register_is_a_noop_without_its_env_var():
    clean_env = {"PATH": "/usr/bin:/bin", "LEVER_KPAD": "0"}
    subprocess.run([sys.executable, "-c", CHECK_NOOP], env=clean_env, check=True, timeout=60)


def test_settings(monkeypatch):
    monkeypatch.setenv("X_FLAG", "1")
    assert env.enabled("X_FLAG")
    monkeypatch.setenv("X_FLAG", "true")
    assert not env.enabled("X_FLAG")
    monkeypatch.setenv("X_KS", "12, 4,6,4")
    assert env.ks_setting("X_KS", (8,)) == (4, 6, 12)
    monkeypatch.delenv("X_KS")
    assert env.ks_setting("X_KS", (8,)) == (8,)
    monkeypatch.setenv("X_N", "")
    assert env.int_setting("X_N", 7) == 7


def test_the_switch_builds_kpad_and_dynk_at_their_own_settings(monkeypatch):
    from lever_plugins.switch import build_hooks

    monkeypatch.setenv("LEVER_DYNK_KS", "4,6,8")
    monkeypatch.setenv("LEVER_KPAD_LOG_EVERY_STEPS", "7")
    hooks = build_hooks()
    assert hooks["dynk"].controller.ks == (4, 6, 8)
    assert hooks["kpad"].log_every_steps == 7
