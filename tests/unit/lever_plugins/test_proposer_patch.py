"""The patch against the installed vLLM's real SuffixDecodingProposer (imports vLLM: ~15 s)."""

from types import SimpleNamespace

import numpy as np
import pytest

from lever_plugins import dynk, kpad, proposer_patch
from lever_plugins.controller import DynamicK
from lever_plugins.proposer_patch import PATCH_ATTR, PluginError, check_signature, install, wrap_propose

pytest.importorskip("arctic_inference")
suffix_decoding = pytest.importorskip("vllm.v1.spec_decode.suffix_decoding")
Proposer = suffix_decoding.SuffixDecodingProposer
MAX_MODEL_LEN = 64


def make_proposer(k: int) -> object:
    spec = SimpleNamespace(
        num_speculative_tokens=k,
        suffix_decoding_max_tree_depth=24,
        suffix_decoding_max_spec_factor=4.0,
        suffix_decoding_min_token_prob=0.0,
        suffix_decoding_max_cached_requests=16,
    )
    model = SimpleNamespace(max_model_len=MAX_MODEL_LEN)
    return Proposer(SimpleNamespace(speculative_config=spec, model_config=model))


def make_batch(rows: list[tuple[str, list[int], int]]) -> SimpleNamespace:
    """rows: (req_id, all token ids so far, prompt length). What propose() reads of an InputBatch."""
    tokens = np.zeros((len(rows), MAX_MODEL_LEN), dtype=np.int32)
    for i, (_, ids, _) in enumerate(rows):
        tokens[i, : len(ids)] = ids
    return SimpleNamespace(
        req_ids=[r for r, _, _ in rows],
        req_id_to_index={r: i for i, (r, _, _) in enumerate(rows)},
        num_tokens_no_spec=np.array([len(ids) for _, ids, _ in rows], dtype=np.int32),
        num_prompt_tokens=np.array([n for _, _, n in rows], dtype=np.int32),
        token_ids_cpu=tokens,
    )


REPEATING = [1, 2, 3, 4, 5] * 4  # a prompt suffix decoding can draft from
ROWS = [
    ("decode", [*REPEATING, 1], len(REPEATING)),
    ("prefill", REPEATING[:10], len(REPEATING)),  # prompt not finished: no sampled token
    ("near_end", [*([7, 8] * 30), 7], 60),  # 61 tokens, max_model_len 64: room for 2 drafts
]
SAMPLED = [[1], [], [7]]


@pytest.fixture
def restore_propose(monkeypatch):
    """Whatever a test installs on the class is undone afterwards."""
    monkeypatch.setattr(Proposer, "propose", Proposer.propose)


def test_installed_signature_is_known():
    # Fails loudly when a vLLM upgrade changes propose(): read it and update proposer_patch.
    assert check_signature(Proposer.propose)[:4] == (
        "self",
        "num_speculative_tokens",
        "input_batch",
        "sampled_token_ids",
    )


def test_known_and_unknown_signatures():
    def v026(self, num_speculative_tokens, input_batch, sampled_token_ids, slot_mappings=None): ...
    def v011(self, input_batch, sampled_token_ids): ...
    def future(self, batch, sampled, k): ...

    check_signature(v026)
    check_signature(v011)
    with pytest.raises(PluginError):
        check_signature(future)


def test_wrapper_finds_arguments_by_name_in_the_old_signature():
    seen = {}

    def v011(self, input_batch, sampled_token_ids):
        return [[1], [2]]

    def hook(proposer, input_batch, sampled_token_ids, drafts):
        seen.update(batch=input_batch, sampled=sampled_token_ids, drafts=drafts)
        return [[*d, 0] for d in drafts]

    hook.name = "test"
    wrapped = wrap_propose(v011, hook)
    assert wrapped("self", "batch", sampled_token_ids=[[5], [6]]) == [[1, 0], [2, 0]]
    assert seen == {"batch": "batch", "sampled": [[5], [6]], "drafts": [[1], [2]]}
    assert getattr(wrapped, PATCH_ATTR) == "test"


@pytest.mark.usefixtures("restore_propose")
def test_kpad_pads_the_real_proposer_to_k():
    plain = make_proposer(8).propose(8, make_batch(ROWS), SAMPLED)
    assert plain[1] == [] and 0 < len(plain[0]) <= 8

    hook = kpad.KPadHook()
    assert install(hook)
    assert not install(kpad.KPadHook())  # a second register() in the same process
    padded = make_proposer(8).propose(8, make_batch(ROWS), SAMPLED, slot_mappings=None)
    assert [len(d) for d in padded] == [8, 0, 2]
    assert padded[0][: len(plain[0])] == plain[0][:8]
    assert hook.steps == 1
    assert hook.stats.drafts == 2 and hook.stats.draft_tokens == 10


@pytest.mark.usefixtures("restore_propose")
def test_kpad_register_reads_its_env_var(monkeypatch):
    monkeypatch.delenv("LEVER_KPAD", raising=False)
    kpad.register()
    assert not hasattr(Proposer.propose, PATCH_ATTR)
    monkeypatch.setenv("LEVER_KPAD", "1")
    kpad.register()
    assert getattr(Proposer.propose, PATCH_ATTR) == "kpad"
    with pytest.raises(PluginError):
        install(dynk.DynkHook(controller=DynamicK()))


@pytest.mark.usefixtures("restore_propose")
def test_dynk_shapes_each_step_to_one_k_and_learns_from_acceptance():
    hook = dynk.DynkHook(controller=DynamicK(ks=(4, 6, 12), token_cost=1 / 512))
    install(hook)
    proposer = make_proposer(12)
    rows = [("a", [*REPEATING, 1], len(REPEATING)), ("b", [*REPEATING, 1], len(REPEATING))]
    first = proposer.propose(12, make_batch(rows), [[1], [1]])
    k1 = hook.controller.last_k
    assert [len(d) for d in first] == [k1, k1]
    # Next step: both requests accepted every draft token (k1 + bonus sampled).
    rows = [(r, [*ids, *first[i], 9], n) for i, (r, ids, n) in enumerate(rows)]
    proposer.propose(12, make_batch(rows), [[*first[0], 9], [*first[1], 9]])
    assert hook.controller.steps == 2
    assert hook.controller.estimate.p_accept > 0.5
    assert sum(hook.controller.steps_by_k.values()) == 2


def test_dynk_drops_ks_above_the_engine_k():
    hook = dynk.DynkHook(controller=DynamicK(ks=(4, 6, 12)))
    hook.fit_ks_to_engine(8)
    assert hook.controller.ks == (4, 6)


def test_step_outcomes():
    outcomes = dynk.step_outcomes(["a", "b", "c"], [[1, 2, 3], [], [4]], {"a": 4, "b": 4})
    assert outcomes == [(4, 2), (0, 0)]


def test_module_constants_point_at_the_installed_class():
    assert proposer_patch.proposer_class() is Proposer
