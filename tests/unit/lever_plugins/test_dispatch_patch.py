"""Observing the dispatcher's runtime mode: a stand-in, then the installed vLLM's class (imports vLLM)."""

from types import SimpleNamespace

import pytest

from lever_plugins.dispatch_patch import PATCH_ATTR, install_observer, wrap_dispatch

dispatcher_module = pytest.importorskip("vllm.v1.cudagraph_dispatcher")
Dispatcher = dispatcher_module.CudagraphDispatcher


def test_wrapper_passes_everything_through_and_reports_the_mode():
    seen: list[object] = []

    def dispatch(self, *args, **kwargs):
        return ("FULL", (args, kwargs))

    wrapped = wrap_dispatch(dispatch, seen.append)
    assert wrapped("self", 8, uniform_decode=True) == ("FULL", ((8,), {"uniform_decode": True}))
    assert seen == ["FULL"]
    assert getattr(wrapped, PATCH_ATTR)


def test_observer_on_the_real_dispatcher_sees_none_without_graphs(monkeypatch):
    monkeypatch.setattr(Dispatcher, "dispatch", Dispatcher.dispatch)
    seen: list[object] = []
    assert install_observer(seen.append)
    assert not install_observer(seen.append)  # a second register() in the same process
    # What the CPU engine has: no keys initialised, so every pass runs without a graph.
    dispatcher = object.__new__(Dispatcher)
    dispatcher.keys_initialized = False
    dispatcher.compilation_config = SimpleNamespace(max_cudagraph_capture_size=None)
    mode, _ = dispatcher.dispatch(num_tokens=8, uniform_decode=True)
    assert [m.name for m in seen] == [mode.name] == ["NONE"]
