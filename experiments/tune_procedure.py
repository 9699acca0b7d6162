"""The tune's procedure: its config, the stages (`Tune`, `procedure`), the confirmation and the deploy
rule, and what it writes (final.yaml, serve.sh, decisions.md). experiments/tune.py runs it as a
command (and sizes its stages first); experiments/procedure_power.py simulates it through this code.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml
from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.errors import HydraException
from omegaconf import MISSING, OmegaConf
from omegaconf.errors import OmegaConfBaseException
from rich.console import Console

from analysis.drift import session_drift
from analysis.final import PROCEDURE, STAGE_LEVER
from analysis.load import anchor_runs, equivalence_table, measured_cells
from analysis.medians import lever_medians
from experiments.decide import (
    KEEP,
    SKIP,
    Decision,
    GateLook,
    LeverConfig,
    TuneRules,
    choose_k,
    decide_change,
)
from experiments.tune_size import (
    SizeSpec,
)
from grid.config.catalog import Catalog, catalog_of
from grid.config.compose import CONF_DIR, check_keys, compose_config, searchpath_dirs, unknown_key_error
from grid.config.expand import expand, to_config
from grid.orchestrate.drive import drive
from store.read import connect
from vocab.cells import EngineSpec
from vocab.errors import ConfigError, GridError
from vocab.paths import project_path, store_path
from vocab.schema import EquivalenceConfig, LeverSpec, ModelSpec
from workers.engine.args import Endpoint, serve_argv, serve_env

TUNE_CONF_DIR = CONF_DIR / "tune"
# The stages in order and the lever each proposes: analysis/final.py PROCEDURE, which the study's walk
# replays too.
STAGES = tuple(stage for stage, _ in PROCEDURE)
# Paired stages draw prompts from load.seed + STAGE_SEED_STEP x the stage's place in STAGES.
STAGE_SEED_STEP = 100


@dataclass
class TuneConfig:
    model: str = MISSING
    corpora: list[str] = field(default_factory=lambda: ["code_complete", "chat_bench"])
    # Decisions use this corpus when it is among `corpora`, else the geometric mean over them.
    final_corpus: str = "mix"
    # The grid experiment every stage starts from (engine, load, gates, cluster).
    experiment: str = "smoke"
    # Grid overrides for every stage, e.g. [load.num_prompts=64, engine=gpu].
    grid_overrides: list[str] = field(default_factory=list)
    suffix_k: int = 8
    kpad_k: int = 8
    sweep_ks: list[int] = field(default_factory=lambda: [4, 6, 8, 12])
    stages: list[str] = field(default_factory=lambda: list(STAGES))
    # load.seed of the confirmation run: a seed no stage used, so its prompts and cells are new.
    confirm_seed: int = 1000
    # grid.repeats of the confirmation (None: the stages' own). Its size is a choice apart from
    # the stages': on a device budget, repeats spent on the stages buy the keep, these the figure.
    confirm_repeats: int | None = None
    # Each stage measures van, the incumbent and the candidate in one session on prompts of its own,
    # and decides on them alone (paired by repeat: an offset between sessions cancels). False: the
    # layout of tunes recorded before 2026-12-02 (van once, each stage its candidate alone, judged
    # across sessions), for replaying their stores.
    paired_stages: bool = True
    rules: TuneRules = field(default_factory=TuneRules)
    # How many launches the stages run, from the noise measured, and within its GPU-hour budget which
    # stages (size.fit_stages: experiments/tune.py fit_stages; experiments/tune_size.py).
    size: SizeSpec = field(default_factory=SizeSpec)
    out_dir: str = "results/tune"


def compose_tune(overrides: list[str]) -> TuneConfig:
    """The tune's config; `hydra.searchpath=[file:///my/conf]` goes to every stage's grid config
    (as does LEVER_GRID_CONF), so models, corpora and experiments come from the user's folders too."""
    ConfigStore.instance().store(name="tune_schema", node=TuneConfig)
    searchpath = [o for o in overrides if o.startswith("hydra.searchpath=")]
    _, rest = searchpath_dirs(overrides)
    try:
        with initialize_config_dir(config_dir=str(TUNE_CONF_DIR), version_base="1.3"):
            cfg = compose(config_name="tune", overrides=rest)
        check_keys(OmegaConf.to_container(cfg, resolve=True), TuneConfig)
        tune = OmegaConf.to_object(cfg)
    except (HydraException, OmegaConfBaseException) as exc:
        if problem := unknown_key_error(exc, Catalog(), TuneConfig):
            raise ConfigError(f"bad tune config or override: {problem}") from exc
        first = "; ".join(line.strip() for line in str(exc).splitlines()[:2] if line.strip())
        raise ConfigError(
            f"bad tune config or override ({first}); e.g. model=tiny corpora=[a,b] "
            "'grid_overrides=[\"grid.repeats=3\"]' (grid overrides quoted)"
        ) from exc
    assert isinstance(tune, TuneConfig)
    tune.grid_overrides = [*searchpath, *tune.grid_overrides]
    unknown = [s for s in tune.stages if s not in STAGES]
    if unknown or tune.stages[:1] != ["van"]:
        raise ConfigError(f"stages must start with van and be among {', '.join(STAGES)}; got {tune.stages}")
    rules = tune.rules
    if not (0.5 < rules.gate_path_pass < 1 and 0 < rules.gate_keep_share < 1):
        raise ConfigError(
            f"rules.gate_path_pass={rules.gate_path_pass}, rules.gate_keep_share={rules.gate_keep_share}: "
            "give a pass rate between 0.5 and 1 (e.g. 0.98) and a share between 0 and 1 (e.g. 0.1)"
        )
    if tune.confirm_repeats is not None and tune.confirm_repeats < 2:
        raise ConfigError(
            f"confirm_repeats={tune.confirm_repeats}: the confirmation's interval needs at least 2 repeats "
            "(3 or more for one narrower than the noise); leave it out to use the stages' grid.repeats"
        )
    return tune


def stage_base(cfg: TuneConfig, model: str) -> list[str]:
    """The grid overrides every stage starts from."""
    # The tune confirms its own choice (confirm below): no study confirmation after each stage.
    corpora = ",".join(cfg.corpora)
    return [f"experiment={cfg.experiment}", f"grid.models=[{model}]", f"grid.corpora=[{corpora}]",
            "grid.confirm.enabled=false", *cfg.grid_overrides]  # fmt: skip


def lever_overrides(levers: Mapping[str, Sequence[int]]) -> list[str]:
    """grid.levers and each lever's Ks (none for levers without drafts) as grid overrides."""
    out = [f"grid.levers=[{','.join(levers)}]"]
    return out + [f"+grid.ks.{lever}=[{','.join(map(str, ks))}]" for lever, ks in levers.items() if ks]


@dataclass
class Tune:
    """A tune in progress: its config, the grid overrides every stage shares, what was decided."""

    cfg: TuneConfig
    model: ModelSpec
    tune_id: str
    console: Console
    decisions: list[Decision] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)
    # Replay: run nothing; each stage decides from the store's cells of the stages run so far.
    replay: bool = False

    @property
    def base(self) -> list[str]:
        return stage_base(self.cfg, self.model.name)

    def stage(
        self, name: str, levers: Mapping[str, Sequence[int]], *extra: str, seed: int | None = None
    ) -> set[str]:
        """Run one stage's grid of `levers` (lever -> its K, none for levers without drafts); return its
        cell keys. Resumes: cells already in the store are not rerun. With paired stages, every stage
        but the confirmation (which gives its own seed) draws its own prompts (stage_seed); the grid
        adds van's replicate wherever a lossless lever is judged, so the gate has van's noise floor
        on the stage's own prompts."""
        overrides = lever_overrides(levers)
        if seed is None and self.cfg.paired_stages:
            seed = self.stage_seed(name)
        if seed is not None:
            overrides.append(f"load.seed={seed}")
        return self.run_stage(name, [*overrides, *extra])

    def stage_seed(self, name: str) -> int:
        """load.seed of a paired stage: the experiment's seed + STAGE_SEED_STEP x the stage's place in
        STAGES, so no two stages share a prompt draw (repeat r adds r: fewer than STAGE_SEED_STEP
        repeats keep them apart) and none meets confirm_seed's."""
        base = to_config(compose_config(self.base)).load.seed
        return base + STAGE_SEED_STEP * STAGES.index(name)

    def run_stage(self, name: str, overrides: list[str]) -> set[str]:
        argv = [*self.base, *overrides, f"session_id={self.tune_id}-{name}"]
        keys = {c.key for c in expand(to_config(compose_config(argv)))}
        self.keys |= keys
        if self.replay:
            return keys
        self.console.rule(f"tune stage {name}")
        code = drive(argv, self.console)
        if code >= 128:  # Ctrl-C or SIGTERM: the run stopped cleanly; the tune stops with its code
            raise SystemExit(code)
        if code != 0:
            raise GridError(
                f"tune stage {name} left cells failed or INVALID; rerun the same command to resume"
            )
        return keys

    def measure(self, name: str, incumbent: LeverConfig, *candidates: LeverConfig) -> set[str] | None:
        """Run stage `name` for `candidates`; with paired stages, van and the incumbent beside them in
        the same session on the same prompts. Returns the keys a paired decision reads (None: every
        stage's cells so far, the unpaired layout's evidence)."""
        configs = [incumbent, *candidates] if self.cfg.paired_stages else list(candidates)
        levers: dict[str, set[int]] = {"van": set()} if self.cfg.paired_stages else {}
        for config in configs:
            levers.setdefault(config.lever, set()).update(k for _, k in config.k_by_corpus if k)
        keys = self.stage(name, {lever: sorted(ks) for lever, ks in levers.items()})
        return keys if self.cfg.paired_stages else None

    def evidence(self, keys: set[str] | None = None) -> tuple:
        """Medians, drift and verdicts of the cells of the stages run so far (`keys` only, when given).

        A replay reads the same cells as the live tune did at that point: the store may hold later
        stages' cells (a confirmation's, with the same lever and K), which the live decision never saw.
        """
        con = connect(self.store)
        wanted = frozenset(keys if keys is not None else self.keys)
        measured = measured_cells(con, set(wanted))
        # cells() hands the same frame to the decision that follows: the store is read once a decision.
        self._last_cells = (wanted, measured)
        medians, _ = lever_medians(measured)
        drift, _ = session_drift(anchor_runs(con, set(measured["session_id"])))
        return medians, drift, equivalence_table(con)

    def cells(self, keys: set[str] | None = None) -> pd.DataFrame | None:
        """The measured cells evidence() reads, with what their engines ran with (the engine_* columns):
        decide_change names what else differed and refuses a dynamic K whose K never moved."""
        wanted = frozenset(keys if keys is not None else self.keys)
        last = getattr(self, "_last_cells", None)
        if last is not None and last[0] == wanted:
            return last[1]
        return measured_cells(connect(self.store), set(wanted))

    @property
    def catalog(self) -> Catalog:
        """Where the stages' models, levers and corpora come from (user folders and given specs too)."""
        return catalog_of(compose_config(self.base))

    @property
    def gate_cfg(self) -> EquivalenceConfig:
        """The equivalence gate's thresholds the stages judge with (the grid's gates.equivalence)."""
        if (cfg := getattr(self, "_gate_cfg", None)) is None:
            cfg = self._gate_cfg = to_config(compose_config(self.base)).gates.equivalence
        return cfg

    def gate_look(self, final: bool = False) -> GateLook:
        """What a decision judges the gate on (experiments/decide.py: GateLook): the tune's cells so
        far, pooled per lever, K and corpus; `final`: the confirmation."""
        return GateLook(frozenset(self.keys), self.gate_cfg, final)

    @property
    def store(self) -> Path:
        paths = compose_config(self.base).paths
        return store_path(paths.store, paths.get("store_options"))

    def uniform(self, lever: str, k: int) -> LeverConfig:
        return LeverConfig.uniform(lever, k, self.cfg.corpora)

    def change(
        self, stage: str, incumbent: LeverConfig, candidate: LeverConfig, keys: set[str] | None = None
    ) -> LeverConfig:
        """Keep `candidate` or `incumbent` (experiments/decide.py), judged on the cells `keys` (the
        stage's own, paired) or, with None, on every stage's so far."""
        medians, drift, verdicts = self.evidence(keys)
        decision = decide_change(stage, incumbent, candidate, medians, drift, verdicts, self.cfg.rules,
                                 self.cfg.final_corpus, self.model.moe, self.model.name,
                                 self.cells(keys), self.gate_look())  # fmt: skip
        self.record(decision)
        return candidate if decision.decision == KEEP else incumbent

    def record(self, decision: Decision) -> None:
        self.decisions.append(decision)
        colour = {"keep": "green", "reject": "red"}.get(decision.decision, "yellow")
        self.console.print(
            f"tune {decision.stage}: [{colour}]{decision.decision}[/] {decision.candidate}: {decision.reason}"
        )


def procedure(t: Tune) -> LeverConfig:
    """The stages in order (experiments/decide.py has the rules); returns the final configuration.

    Paired stages (the default): each stage measures van, the incumbent and its candidate(s) in one
    session on prompts of its own, and decides on that session's cells alone, paired by repeat, so
    a between-session offset cancels. Unpaired (paired_stages=false, the layout of tunes recorded
    before 2026-12-02): van once, each later stage its candidate alone, judged across sessions.
    """
    cfg, stages = t.cfg, t.cfg.stages
    best = t.uniform("van", 0)
    if cfg.paired_stages:
        t.record(Decision("van", "van", "", SKIP, "measured beside every candidate, in its stage's session"))
    else:
        # With its replicate: the later stages' lossless levers are judged against this van run
        # by the paired test, which needs van's own run-to-run agreement on the same prompts.
        t.stage("van", {"van": []}, "gates.equivalence.van_replicate_always=true")
    if "suffix" in stages:
        candidate = t.uniform(STAGE_LEVER["suffix"], cfg.suffix_k)
        best = t.change("suffix", best, candidate, t.measure("suffix", best, candidate))
    if "kpad" in stages:
        candidate = t.uniform(STAGE_LEVER["kpad"], cfg.kpad_k)
        best = t.change("kpad", best, candidate, t.measure("kpad", best, candidate))
    if "best_k" in stages:
        # Sweep the drafting lever the procedure has reached (K-pad, else suffix), kept or not
        # at its first K: another K may beat the incumbent where that one did not.
        lever = next((STAGE_LEVER[s] for s in ("kpad", "suffix") if s in stages), None)
        if lever is None:
            t.record(Decision("best_k", "K sweep", best.label, SKIP, "no drafting lever in the stages"))
        else:
            keys = t.measure("best_k", best, *(t.uniform(lever, k) for k in cfg.sweep_ks))
            medians, drift, _ = t.evidence(keys)
            chosen, decision = choose_k(lever, cfg.sweep_ks, cfg.corpora, medians, drift, cfg.rules,
                                        cfg.final_corpus)  # fmt: skip
            t.record(decision)
            if chosen is not None:
                swept = t.uniform(lever, chosen)
                if swept != best:
                    best = t.change("best_k", best, swept, keys)
    if "w4a4" in stages:
        if not t.model.quantized_variant:
            reason = (
                f"model '{t.model.name}' has no quantized_variant (an NVFP4 checkpoint; see docs/w4a4.md)"
            )
            t.record(Decision("w4a4", "w4a4", best.label, SKIP, reason))
        else:
            candidate = t.uniform(STAGE_LEVER["w4a4"], 0)
            best = t.change("w4a4", best, candidate, t.measure("w4a4", best, candidate))
    if "dynk" in stages:
        dynk = t.catalog.load(LeverSpec, STAGE_LEVER["dynk"])
        candidate = t.uniform(STAGE_LEVER["dynk"], dynk.ks[0])
        best = t.change("dynk", best, candidate, t.measure("dynk", best, candidate))
    return best


def confirm(t: Tune, final: LeverConfig) -> Decision | None:
    """The final configuration against van in a fresh session with new seeds; None when not run.

    Judged by the same rule as every stage (experiments/decide.py), on the
    confirmation's cells alone, so its figure carries none of the selection.
    """
    if "confirm" not in t.cfg.stages:
        return None
    if final.lever == "van":
        t.record(
            Decision("confirm", "van", "van", SKIP, "the final configuration is van: nothing to confirm")
        )
        return None
    corpora_by_k: dict[int, list[str]] = {}
    for corpus, k in final.k_by_corpus:
        corpora_by_k.setdefault(k, []).append(corpus)
    keys: set[str] = set()
    for k, corpora in sorted(corpora_by_k.items()):
        overrides = [f"grid.corpora=[{','.join(corpora)}]"]
        if t.cfg.confirm_repeats is not None:  # after grid_overrides: the later value wins
            overrides.append(f"grid.repeats={t.cfg.confirm_repeats}")
        name = "confirm" if len(corpora_by_k) == 1 else f"confirm-k{k}"
        keys |= t.stage(name, {"van": [], final.lever: [k] if k else []}, *overrides, seed=t.cfg.confirm_seed)
    medians, drift, verdicts = t.evidence(keys)
    decision = decide_change("confirm", t.uniform("van", 0), final, medians, drift, verdicts, t.cfg.rules,
                             t.cfg.final_corpus, t.model.moe, t.model.name, t.cells(keys),
                             t.gate_look(final=True))  # fmt: skip
    decision.decision = "confirmed" if decision.decision == KEEP else "not confirmed"
    t.record(decision)
    return decision


def tuning_gain(t: Tune, final: LeverConfig) -> Decision | None:
    """The stage decision that made `final` the incumbent (the figure the selection saw)."""
    return next((d for d in reversed(t.decisions) if d.decision == KEEP and d.candidate == final.label), None)


def deploy_k(final: LeverConfig, final_corpus: str) -> int:
    ks = dict(final.k_by_corpus)
    return ks.get(final_corpus, max(ks.values()))


def serve_command(t: Tune, final: LeverConfig) -> str:
    """The `vllm serve` command of the final configuration, environment included, as one shell line."""
    config = to_config(compose_config(t.base))
    lever = catalog_of(config).load(LeverSpec, final.lever)
    spec = EngineSpec(t.model, lever, deploy_k(final, t.cfg.final_corpus), config.engine)
    argv = serve_argv(
        spec, Endpoint("0.0.0.0", 8000, "${VLLM_API_KEY}"), project_path(config.paths.models_dir)
    )
    env = serve_env(spec, {}, Path("${HOME}/.cache/lever-grid"))
    # Keep the settings that change what the engine does; drop the harness's cache paths.
    keep = {k: v for k, v in env.items() if not k.endswith(("_CACHE_DIR", "_CACHE_ROOT", "HF_HOME"))}
    quoted = [a if a == "${VLLM_API_KEY}" else shlex.quote(a) for a in argv]
    return (
        "env "
        + " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(keep.items()))
        + " \\\n  "
        + " ".join(quoted)
    )


def speedup_fields(decision: Decision | None) -> dict[str, object]:
    """x van with its 90% interval and label, as final.yaml states them."""
    if decision is None:
        return {"speedup_vs_van": None, "interval": None, "label": None, "repeats": None}
    return {
        "speedup_vs_van": round(1 + decision.gain, 4) if decision.gain == decision.gain else None,
        "interval": [round(decision.ci_lo, 4), round(decision.ci_hi, 4)]
        if decision.ci_lo == decision.ci_lo
        else None,
        "label": decision.label or decision.decision,
        "repeats": decision.n_repeats or None,
    }


def deployment(t: Tune, final: LeverConfig, confirmation: Decision | None) -> tuple[LeverConfig, str]:
    """What final.yaml and serve.sh deploy, and why: the procedure's choice only when its confirmation
    (a fresh session, new prompts, paired with van) is a real gain; else van, the last configuration
    confirmed. The confirmation is the one test the whole procedure's error rate rests on: a tune of
    several keep/drop stages and a best-K pick deploys a lever that does nothing far more often than
    any one stage's 5 % (`make power`), and the confirmation brings it back under 5 %."""
    van = t.uniform("van", 0)
    if final.lever == "van":
        return van, "no stage kept a change over van"
    if confirmation is None:
        return (
            van,
            f"{final.label} was chosen but no confirmation ran (the confirm stage is off): not deployed",
        )
    if confirmation.decision != "confirmed":
        return van, f"{final.label} was chosen but not confirmed on new prompts ({confirmation.reason})"
    return final, f"{final.label} confirmed on new prompts ({confirmation.reason})"


def write_outputs(t: Tune, final: LeverConfig, confirmation: Decision | None = None) -> Path:
    """final.yaml, serve.sh and decisions.md for the deployed configuration (deployment), with the
    procedure's candidate and its figures beside it when it was not deployed."""
    out = project_path(t.cfg.out_dir) / t.model.name
    out.mkdir(parents=True, exist_ok=True)
    deployed, why = deployment(t, final, confirmation)
    (out / "final.yaml").write_text(
        yaml.safe_dump(
            {
                "model": t.model.name,
                "lever": deployed.lever,
                "k": deploy_k(deployed, t.cfg.final_corpus),
                # The K served on each corpus: one launch serves them all, so one K (the sweep's
                # per-corpus picks are in decisions.md, best_k row).
                "k_by_corpus": dict(deployed.k_by_corpus),
                "deployed_because": why,
                "corpora": list(t.cfg.corpora),
                "decided_on": t.cfg.final_corpus if t.cfg.final_corpus in t.cfg.corpora else "geometric mean",
                "tune_id": t.tune_id,
                "store": str(t.store),
                # The procedure's choice, deployed only when confirmed.
                "candidate": {
                    "lever": final.lever,
                    "k": deploy_k(final, t.cfg.final_corpus),
                    "label": final.label,
                },
                # The reported figure: the confirmation run's, in a fresh session with new seeds.
                "confirmation": speedup_fields(confirmation),
                # False: its gain did not clear the noise on new prompts, and van is deployed.
                "confirmed": None if confirmation is None else confirmation.decision == "confirmed",
                # What the selection saw (the maximum of noisy figures), for comparison only.
                "in_tuning": speedup_fields(tuning_gain(t, final)),
            },
            sort_keys=False,
        )
    )
    (out / "serve.sh").write_text(
        "#!/usr/bin/env bash\n# " + deployed.label + ": " + why + "\n" + serve_command(t, deployed) + "\n"
    )
    (out / "decisions.md").write_text(decision_log(t, final, deployed))
    return out


def fmt(value: float, spec: str) -> str:
    """A figure for the log; NaN (not measured) as '-'."""
    return "-" if value != value else format(value, spec)


def decision_log(t: Tune, final: LeverConfig, deployed: LeverConfig | None = None) -> str:
    deployed = deployed or final
    title = (
        deployed.label if deployed == final else f"{deployed.label} (candidate {final.label} not deployed)"
    )
    lines = [
        f"# Tuning {t.model.name}: {title}",
        "",
        f"Tune {t.tune_id}; corpora {', '.join(t.cfg.corpora)}; decisions on "
        + (t.cfg.final_corpus if t.cfg.final_corpus in t.cfg.corpora else "the geometric mean over corpora")
        + ". A change is kept only when its 90% interval over repeats lies wholly beyond the drift band "
        "(experiments/decide.py, analysis/decision.py); the last row is the confirmation run, whose "
        "figure is the one reported: the candidate is deployed only when it is a real gain there.",
        "",
        "| stage | candidate | vs | decision | candidate tok/s | incumbent tok/s | gain | drift band "
        "| gate | why |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for d in t.decisions:
        figures = [fmt(d.candidate_tok_per_s, ",.1f"), fmt(d.incumbent_tok_per_s, ",.1f"),
                   fmt(d.gain, "+.1%"), fmt(d.band, ".1%")]  # fmt: skip
        cells = [
            d.stage,
            d.candidate,
            d.incumbent or "-",
            f"**{d.decision}**",
            *figures,
            d.gate or "-",
            d.reason,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if note := unconfirmed_note(t):
        lines += ["", note]
    return "\n".join(lines) + "\n"


def unconfirmed_note(t: Tune) -> str:
    """What a final configuration whose confirmation did not clear the noise means, in words; '' otherwise."""
    d = next((d for d in t.decisions if d.stage == "confirm"), None)
    if d is None or d.decision != "not confirmed":
        return ""
    repeats = f"{d.n_repeats} repeats" if d.n_repeats else "its repeats"
    return (
        f"**Not confirmed, not deployed.** {d.candidate} was the procedure's choice because its stage "
        f"cleared the rule, but on new prompts ({repeats}) its gain over van was {fmt(d.gain, '+.1%')} with "
        "an interval that does not clear the noise, so final.yaml and serve.sh deploy van. Run the "
        "confirmation again with more repeats (`confirm_repeats=N`; `make power` says how many your "
        "noise needs) to deploy it."
    )
