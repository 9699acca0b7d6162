"""The patch-point table against the installed vLLM (the project's 0.32 CPU build), and checks that fail.

Every row holds, imported and read from source; a row taken away or shaped otherwise fails; the
plugins patch what the table names, and every attribute they read off a vLLM object has a row.
Imports vLLM (~15 s, shared with the other plugin tests). `make compat` runs the same check against
another release in a side environment (docs/compat.md).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib

import pytest

from lever_plugins import dispatch_patch, patch_check, proposer_patch, step_tally
from lever_plugins.patch_check import check_all, check_point, failures
from lever_plugins.patch_points import BY_KEY, POINTS
from vocab.paths import project_path

suffix_decoding = pytest.importorskip("vllm.v1.spec_decode.suffix_decoding")
Proposer = suffix_decoding.SuffixDecodingProposer


def test_every_patch_point_holds_in_the_installed_vllm():
    results = check_all()
    assert failures(results) == []
    # 0.32 imports on this machine: nothing fell back to source but what only source shows.
    assert {r.key: r.import_error for r in results if r.import_error} == {}
    assert {r.how for r in results} == {"import", "import+source", "source"}


def test_every_patch_point_holds_read_from_source_alone():
    # The side environment's fallback where a GPU wheel's module does not import.
    results = check_all(how="source")
    assert failures(results) == []
    assert {r.how for r in results} == {"source"}


def test_a_method_taken_away_fails_the_check(monkeypatch):
    monkeypatch.delattr(Proposer, "propose")
    result = check_point(BY_KEY["proposer.propose"])
    assert not result.ok and result.problem == "no method SuffixDecodingProposer.propose"


def test_a_changed_signature_fails_the_check(monkeypatch):
    def propose(self, batch, sampled, k): ...

    monkeypatch.setattr(Proposer, "propose", propose)
    result = check_point(BY_KEY["proposer.propose"])
    assert not result.ok and "signature ('self', 'batch', 'sampled', 'k')" in result.problem


@pytest.mark.parametrize("how", ["import", "source"])
@pytest.mark.parametrize(
    ("key", "change", "problem"),
    [
        ("proposer.max_model_len", {"qualname": "SuffixDecodingProposer.max_len"}, "nothing sets"),
        ("dispatcher.dispatch", {"returns": "dict["}, "returns tuple[CUDAGraphMode, BatchDescriptor]"),
        ("cudagraph_mode.members", {"accepts": ("NONE", "FULL_ONLY")}, "no member FULL_ONLY"),
        ("suffix_cache.init", {"accepts": ("max_tree_depth", "max_depth")}, "takes no max_depth"),
        ("proposer", {"qualname": "SuffixProposer"}, "no class SuffixProposer"),
        ("dev_routes", {"accepts": ('"/collective_rpc"', '"/lever_reset"')}, 'no "/lever_reset"'),
    ],
)
def test_a_row_vllm_does_not_have_fails_the_check(key, change, problem, how):
    result = check_point(dataclasses.replace(BY_KEY[key], **change), how=how)
    assert not result.ok and problem in result.problem


def test_a_module_that_does_not_import_is_read_from_source(monkeypatch):
    def no_gpu(name, package=None):
        raise RuntimeError("Failed to infer device type\nmore")

    monkeypatch.setattr(patch_check.importlib, "import_module", no_gpu)
    result = check_point(BY_KEY["proposer.propose"])
    assert result.ok and result.how == "source"
    assert result.import_error == "RuntimeError: Failed to infer device type"


def test_the_plugins_patch_what_the_table_names():
    propose, dispatch = BY_KEY["proposer.propose"], BY_KEY["dispatcher.dispatch"]
    assert (
        propose.module,
        propose.class_name,
    ) == (proposer_patch.PROPOSER_MODULE, proposer_patch.PROPOSER_CLASS)
    assert set(propose.params) == proposer_patch.KNOWN_SIGNATURES
    assert (
        dispatch.module,
        dispatch.class_name,
    ) == (dispatch_patch.DISPATCHER_MODULE, dispatch_patch.DISPATCHER_CLASS)
    assert {m.upper() for m in step_tally.MODES} == set(BY_KEY["cudagraph_mode.members"].accepts)
    assert proposer_patch.proposer_class() is Proposer


# The plugins' names for vLLM's objects, and the class each is an instance of (the table's rows).
RECEIVERS = {
    "proposer": "SuffixDecodingProposer",
    "drafter": "SuffixDecodingProposer",
    "input_batch": "InputBatch",
    "runner": "GPUModelRunner",
    "cache": "SuffixDecodingCache",
    "states": "RequestState",
    # ResetExtension's `self` is vLLM's worker, once mixed in.
    "self": "Worker",
}
READERS = ("kpad.py", "dynk.py", "switch.py", "reset_ext.py")


def attributes_read(path) -> set[tuple[str, str]]:
    """(class, attribute) of every `receiver.attr` and `getattr(receiver, "attr")` in a plugin's source,
    less the plugin's own classes' members (ResetExtension's methods on `self`)."""
    tree = ast.parse(path.read_text())
    own = {
        n.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for n in c.body if hasattr(n, "name")
    }
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            receiver, attr = node.value.id, node.attr
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and isinstance(node.args[0], ast.Name)
            and isinstance(node.args[1], ast.Constant)
        ):
            receiver, attr = node.args[0].id, node.args[1].value
        else:
            continue
        if (
            receiver in RECEIVERS
            and attr not in own
            and not (receiver == "self" and path.name != "reset_ext.py")
        ):
            found.add((RECEIVERS[receiver], attr))
    return found


def test_every_attribute_a_plugin_reads_off_vllm_has_a_row():
    rows = {(p.class_name, p.member) for p in POINTS if p.member}
    read = set().union(*(attributes_read(project_path("lever_plugins") / name) for name in READERS))
    assert read  # the scan sees the plugins' reads
    assert sorted(read - rows) == []


def test_the_scan_catches_an_attribute_without_a_row(tmp_path):
    plugin = tmp_path / "kpad.py"
    plugin.write_text(
        "def hook(proposer, input_batch):\n    return proposer.draft_len, input_batch.req_ids\n"
    )
    rows = {(p.class_name, p.member) for p in POINTS if p.member}
    assert attributes_read(plugin) - rows == {("SuffixDecodingProposer", "draft_len")}


def test_the_table_names_importable_modules_only_inside_functions():
    # Loaded by vLLM in every process: the table itself must not import vLLM (or anything heavy).
    source = project_path("lever_plugins/patch_points.py").read_text()
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])
    }
    assert imported <= {"__future__", "dataclasses"}
    assert importlib.import_module("lever_plugins.patch_points").POINTS == POINTS
