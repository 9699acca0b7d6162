"""The adversarial pass of issue 45, as a script: bad inputs through the real CLIs, then faults.

`python scripts/adversarial.py [--inputs | --faults] [--json PATH] [--only SUBSTR]` (`make adversarial`).

Inputs: every case is a command line run as a subprocess in a fresh temporary folder (its own cwd
and store, a few folders deep so that a `../../..` escape still lands inside it and is seen). A
refused input must exit 2 with exactly one line on stderr naming the problem; a usage error
(argparse) exits 2 with `error:` on its last line; a control must exit 0. For every case: no
"Traceback", no planted secret in stdout or stderr, nothing written in the temporary folder outside
the store, the store unchanged (or absent) after a refusal, and nothing new in the repository (its
`git status` and results/).

Faults: each runs a real `grid run` driver as a subprocess (its own local Ray cluster) on the real
CPU engine where the fault is the engine's (a stop inside the window, a kill mid-load, an engine
that will not start), else on the stand-in engine of tests/stubs; each checks the exit code, that
the last line of the output is the harness's own, no traceback, and that the store reads with
pandas and DuckDB with no damaged or half-written part. One vLLM engine at a time.

Not part of `make test` or CI: the whole pass takes about half an hour on a 2-core machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

PY = sys.executable
MODEL = REPO / ".cache/models/SmolLM2-135M-Instruct"
SECRET = "SECRETPLANTED9f3a"
KEY = "AKIAPLANTED7q2"
CRED_URL = f"s3://{KEY}:{SECRET}@host/bucket"
# Paths other engineers edit beside this work: their changes are not this pass's writes.
NOT_OURS = ("experiments/tune", "conf/tune", "docs/tune.md", "tests/unit/experiments", "docs/benchmarks/")
DEPTH = ("d1", "d2", "d3", "d4", "d5")  # the case's cwd and store sit this deep in its temp folder
REFUSED, USAGE, OK = "refused", "usage", "ok"
# exit 2, "error: N problems in the config:" then one indented line per problem (each names one)
REFUSED_LIST = "refused-list"
# exit 0 from a listing command (grid corpus) whose table names the problem in the row's state
REPORTED = "reported"
# exit 1 after one engine start that vLLM refused: the cell failed, "not retried", no traceback
ENGINE_REFUSED = "engine-refused"
STUB_MODULE = "tests.stubs.stub_engine"


# -- records -------------------------------------------------------------------------------------


@dataclass
class Result:
    """One case's record: what ran, what it gave, and whether that is what the case expects."""

    id: str
    group: str
    kind: str  # input | fault
    expect: str
    outcome: str = ""
    passed: bool = False
    problems: list[str] = field(default_factory=list)
    exit_code: int | None = None
    last_line: str = ""
    wall_s: float = 0.0
    argv: list[str] = field(default_factory=list)


# -- input cases ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """A bad input (or a control): argv after the interpreter, with {tmp}, {store}, {model}, {s3}."""

    id: str
    group: str
    argv: tuple[str, ...]
    expect: str = REFUSED
    words: tuple[str, ...] = ()  # words the error line must hold (lower case compare)
    setup: Callable[[Path], None] | None = None
    store: str = "none"  # none: no store folder before; empty: an empty folder
    needs_s3: bool = False
    timeout_s: float = 90.0
    # Where the error line is: "err", or "out" for grid.plan.groups, which prints every line of its own
    # (its errors too) on stdout, on purpose (grid/plan/groups.py: main).
    stream: str = "err"


def grid(*args: str) -> tuple[str, ...]:
    return ("-m", "grid", *args)


def write(path: Path, data: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)


def trace_setup(body: bytes | str, name: str = "t.jsonl") -> Callable[[Path], None]:
    return lambda tmp: write(tmp / name, body)


def model_setup(files: dict[str, bytes | str]) -> Callable[[Path], None]:
    def make(tmp: Path) -> None:
        (tmp / "m").mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            write(tmp / "m" / name, data)

    return make


SMOL_CONFIG = (MODEL / "config.json").read_text() if (MODEL / "config.json").is_file() else "{}"
# Everything of the real model but its weights: a damaged weights file is then the only fault.
SMOL_FILES: dict[str, bytes | str] = {
    p.name: p.read_bytes() for p in sorted(MODEL.glob("*")) if p.is_file() and p.suffix != ".safetensors"
}
STORE = "paths.store={store}"
SMALL_RUN = (
    "experiment=smoke",
    STORE,
    "grid.levers=[van]",
    "grid.corpora=[code_complete]",
    "grid.anchor.enabled=false",
    "load.num_prompts=8",
    "load.max_tokens=16",
)


def unknown_name_cases() -> list[Case]:
    cases = []
    unknown = {
        "model": "grid.models=[nosuchmodel]",
        "corpus": "grid.corpora=[nosuchcorpus]",
        "lever": "grid.levers=[nosuchlever]",
        "experiment": "experiment=nosuchexp",
        "anchor-model": "grid.anchor.model=nosuchmodel",
        "anchor-lever": "grid.anchor.lever=nosuchlever",
        "anchor-corpus": "grid.anchor.corpus=nosuchcorpus",
    }
    for command in ("run", "plan", "status", "corpus", "confirm"):
        for what, override in unknown.items():
            if command in ("status", "corpus") and what.startswith("anchor"):
                continue
            word = override.split("=")[1].strip("[]")
            cases.append(
                Case(
                    f"unknown-{what}-{command}", "unknown-name", grid(command, override, STORE), words=(word,)
                )
            )
    cases += [
        Case(
            "unknown-cluster-plan",
            "unknown-name",
            grid("plan", "cluster=nosuchcluster", STORE),
            words=("nosuchcluster",),
        ),
        Case(
            "unknown-cluster-simulate",
            "unknown-name",
            grid("simulate", "cluster=nosuchcluster"),
            words=("nosuchcluster",),
        ),
        Case("unknown-command", "unknown-name", grid("nosuchcommand"), expect=USAGE),
        Case("unknown-plan-preset", "unknown-name", grid("plan", "plan=nosuchplan"), words=("nosuchplan",)),
        Case(
            "unknown-engine-preset",
            "unknown-name",
            grid("plan", "engine=nosuchengine"),
            words=("nosuchengine",),
        ),
        Case("unknown-load-preset", "unknown-name", grid("plan", "load=nosuchload"), words=("nosuchload",)),
        Case("unknown-summary-format", "unknown-name", grid("summary", "format=xml", STORE), store="empty"),
        Case("unknown-status-format", "unknown-name", grid("status", "format=xml", STORE), store="empty"),
        Case(
            "unknown-run-mode", "unknown-name", grid("run", "run.mode=sometimes", STORE), words=("run.mode",)
        ),
        Case("unknown-repeat-order", "unknown-name", grid("plan", "grid.repeat_order=random")),
        Case("unknown-engine-reuse", "unknown-name", grid("plan", "grid.engine_reuse=sometimes")),
        Case("unknown-pin-cpus", "unknown-name", grid("run", "load.pin_cpus=some", STORE)),
        Case(
            "unknown-tune-model",
            "unknown-name",
            ("-m", "experiments.tune", "model=nosuchmodel"),
            words=("nosuchmodel",),
        ),
        Case(
            "unknown-tune-corpus",
            "unknown-name",
            ("-m", "experiments.tune", "model=tiny", "corpora=[nosuchcorpus]"),
            words=("nosuchcorpus",),
        ),
        Case("unknown-tune-key", "unknown-name", ("-m", "experiments.tune", "model=tiny", "nosuchkey=1")),
        Case(
            "unknown-tune-stage",
            "unknown-name",
            ("-m", "experiments.tune", "model=tiny", "stages=[nosuchstage]"),
        ),
        Case(
            "unknown-assets-corpus",
            "unknown-name",
            ("-m", "assets", "--only", "nosuchcorpus"),
            words=("nosuchcorpus",),
        ),
        # Documented: a sigma the store cannot estimate falls back to the default, and it says which.
        Case(
            "unknown-power-model",
            "unknown-name",
            ("-m", "analysis.power", "--store", "{store}", "--model", "nosuch", "--draws", "200"),
            expect=OK,
            store="empty",
        ),
    ]
    return cases


def override_cases() -> list[Case]:
    bad = {
        "unclosed-list": "grid.models=[tiny",
        "no-key": "=tiny",
        "double-dot": "grid..models=[tiny]",
        "unknown-top-key": "nosuchkey=1",
        "unknown-section-key": "grid.nosuchkey=1",
        "unknown-load-key": "load.concurency=3",
        "delete-missing": "~nosuchkey",
        "no-value-sign": "grid.models",
        "double-equals": "load.concurrency==3",
        "trailing-comma": "grid.levers=[van,",
        "bad-quote": "name='unterminated",
        "interpolation": "name=${oc.env:HOME}",
        "searchpath-missing": "hydra.searchpath=[file:///nonexistent/conf]",
        "nested-braces": "grid.ks={{suffix:[4]}",
    }
    cases = [Case(f"override-{k}-plan", "override", grid("plan", v)) for k, v in bad.items()]
    cases += [
        Case(f"override-{k}-run", "override", grid("run", v, STORE))
        for k, v in bad.items()
        if k in ("unclosed-list", "unknown-top-key", "unknown-load-key", "interpolation")
    ]
    # Accepted on purpose: `+key` on an existing key sets it (as Hydra's ++), and a hydra.* key
    # changes nothing here (no output folder is made): controls, checked for writes.
    cases += [
        Case("override-plus-existing-key-plan", "override", grid("plan", "+grid.models=[tiny]"), expect=OK),
        Case("override-hydra-key-plan", "override", grid("plan", "hydra.run.dir={tmp}/hydra-out"), expect=OK),
    ]
    cases += [
        Case(
            "override-tune-malformed",
            "override",
            ("-m", "experiments.tune", "model=tiny", "corpora=[code_complete"),
        ),
        Case(
            "override-tune-grid-overrides",
            "override",
            ("-m", "experiments.tune", "model=tiny", 'grid_overrides=["load.nosuchkey=1"]'),
        ),
        Case("override-assets-malformed", "override", ("-m", "assets", "paths.data_dir=[x")),
        Case("override-assets-unknown", "override", ("-m", "assets", "nosuchkey=1")),
    ]
    return cases


def type_cases() -> list[Case]:
    bad = {
        "concurrency-word": "load.concurrency=abc",
        "repeats-float": "grid.repeats=1.5",
        "max-model-len-list": "engine.max_model_len=[1]",
        "temperature-word": "load.temperature=hot",
        "min-window-word": "gates.min_window_s=x",
        "keep-invalid-word": "run.keep_invalid=maybe",
        "ks-not-list": "+grid.ks.suffix=x",
        "models-dict": "grid.models={a:1}",
        "num-prompts-word": "+grid.num_prompts.code_complete=many",
        "env-list": "engine.env=[a,b]",
        "extra-args-int": "engine.extra_args=3",
        "store-list": "paths.store=[a,b]",
    }
    cases = [Case(f"type-{k}-plan", "wrong-type", grid("plan", v)) for k, v in bad.items()]
    cases += [
        Case(f"type-{k}-run", "wrong-type", grid("run", v, STORE))
        for k, v in bad.items()
        if k in ("concurrency-word", "repeats-float", "keep-invalid-word", "store-list")
    ]
    cases += [
        Case("type-power-draws", "wrong-type", ("-m", "analysis.power", "--draws", "abc"), expect=USAGE),
        Case(
            "type-groups-start",
            "wrong-type",
            ("-m", "grid.plan.groups", "--start-s", "x", "--block-s", "1", "--half-width", "0.1"),
            expect=USAGE,
        ),
        Case(
            "type-tune-confirm-repeats",
            "wrong-type",
            ("-m", "experiments.tune", "model=tiny", "confirm_repeats=abc"),
        ),
    ]
    return cases


def range_cases() -> list[Case]:
    bad = {
        "concurrency-zero": "load.concurrency=0",
        "concurrency-negative": "load.concurrency=-1",
        "num-prompts-zero": "load.num_prompts=0",
        "max-tokens-zero": "load.max_tokens=0",
        "repeats-zero": "grid.repeats=0",
        "repeats-negative": "grid.repeats=-3",
        "temperature-negative": "load.temperature=-1",
        "max-model-len-zero": "engine.max_model_len=0",
        "gpu-util-above-one": "engine.gpu_memory_utilization=1.5",
        "k-zero": "+grid.ks.suffix=[0]",
        "k-negative": "+grid.ks.suffix=[-4]",
        "request-timeout-zero": "load.request_timeout_s=0",
        "start-timeout-negative": "engine.start_timeout_s=-1",
        "looks-descending": "grid.sequential.looks=[5,3]",
        "max-tokens-over-context": "load.max_tokens=100000",
        "anchor-runs-zero": "grid.anchor.runs=0",
        "warmup-negative": "load.warmup_requests=-1",
        "max-attempts-zero": "run.max_attempts=0",
        "huge-int": "load.concurrency=99999999999999999999999",
        "nan": "load.temperature=nan",
    }
    cases = [Case(f"range-{k}-plan", "out-of-range", grid("plan", v)) for k, v in bad.items()]
    cases += [
        Case(f"range-{k}-run", "out-of-range", grid("run", v, STORE))
        for k, v in bad.items()
        if k in ("concurrency-zero", "repeats-zero", "max-tokens-over-context", "max-attempts-zero", "nan")
    ]
    cases += [
        Case(
            "range-power-draws-negative",
            "out-of-range",
            ("-m", "analysis.power", "--draws", "-5"),
            expect=USAGE,
        ),
        Case(
            "range-tune-confirm-repeats-zero",
            "out-of-range",
            ("-m", "experiments.tune", "model=tiny", "confirm_repeats=0"),
        ),
    ]
    return cases


def trace_cases() -> list[Case]:
    good_row = '{"id": "a", "prompt": "hello"}\n'
    bodies: dict[str, bytes | str] = {
        "empty": "",
        "not-json": "this is not json\n",
        "array-row": '["a", "b"]\n',
        "no-prompt": '{"id": "a", "text_missing": 1}\n' * 3,
        "prompt-number": '{"id": "a", "prompt": 42}\n' * 3,
        "prompt-empty": '{"id": "a", "prompt": ""}\n' * 3,
        "nul-bytes": b'{"id": "a", "prompt": "x\x00y"}\n\x00\x00\x00\n',
        "binary": bytes(range(256)) * 4,
        "bad-utf8": b'{"id": "a", "prompt": "\xff\xfe\xfa"}\n',
        "half-row": "".join(f'{{"id": "a{i}", "prompt": "hello {i}"}}\n' for i in range(3))
        + '{"id": "b", "prom',
        "only-whitespace": "\n\n   \n",
        "too-few-rows": good_row,
    }
    # `grid corpus` lists every corpus with its state (a report: exit 0, the problem in the row);
    # `grid run` refuses it before launch.
    listed = ("unreadable", "missing", "no prompts", "empty", "bad corpus row", "not a file")
    over = (
        "grid.corpora=[mine]",
        "+corpus.mine.path={tmp}/t.jsonl",
        "grid.levers=[van]",
        "grid.models=[tiny]",
    )
    small = (STORE, "grid.anchor.enabled=false", "load.num_prompts=2", "load.warmup_requests=0")
    cases = []
    for name, body in bodies.items():
        setup = trace_setup(body)
        # One good row is a corpus to list (its one prompt); only a run needs more.
        listing = OK if name == "too-few-rows" else REPORTED
        cases.append(Case(f"trace-{name}-corpus", "trace", grid("corpus", *over), listing, listed, setup))
        cases.append(Case(f"trace-{name}-run", "trace", grid("run", *over, *small), setup=setup))
    paths = {
        "missing-file": "{tmp}/nope.jsonl",
        "is-folder": "{tmp}",
        "relative-escape": "../../../../../../etc/passwd",
        "dev-null": "/dev/null",
    }
    for name, path in paths.items():
        where = (
            "grid.corpora=[mine]",
            f"+corpus.mine.path={path}",
            "grid.levers=[van]",
            "grid.models=[tiny]",
        )
        cases.append(Case(f"trace-{name}-corpus", "trace", grid("corpus", *where), REPORTED, listed))
        cases.append(Case(f"trace-{name}-run", "trace", grid("run", *where, *small)))
    return cases


# Values of a user-given name that would become a path component.
NAME_VALUES = {
    "dotdot": "../../../advescape",
    "absolute": "{tmp}/abs-target/advescape",
    "slash": "a/b",
    "dot": "..",
    "hidden": ".hidden",
    "newline": "a\nb",
    "long": "n" * 300,
    "backslash": "a\\..\\..\\b",
    "rtl-unicode": "a\u202eb",
    "emoji": "a\U0001f600b",
    "tab": "a\tb",
    "dash": "-rf",
}


def path_name_cases() -> list[Case]:
    cases = []
    keys = {
        "name-report": lambda v: grid("report", f"name={v}", STORE),
        "name-run": lambda v: grid("run", f"name={v}", *SMALL_RUN[1:]),
        "session-run": lambda v: grid("run", f"session_id={v}", *SMALL_RUN[1:]),
        "corpus-name": lambda v: grid(
            "run", f"grid.corpora=[{v}]", f"+corpus.{v}.path={{tmp}}/t.jsonl", STORE
        ),
        "model-name": lambda v: grid("run", f"grid.models=[{v}]", f"+model.{v}.path={{model}}", STORE),
    }
    quoted = ("newline", "tab", "dash", "dot", "hidden", "rtl-unicode", "emoji", "long", "backslash")
    for key, argv in keys.items():
        for vname, value in NAME_VALUES.items():
            if key in ("corpus-name", "model-name") and vname in quoted[:5]:
                continue  # not a Hydra key at all: the override itself is refused (the override group)
            store = "empty" if key == "name-report" else "none"
            cases.append(
                Case(
                    f"path-{key}-{vname}",
                    "path-name",
                    argv(value),
                    setup=trace_setup('{"prompt":"x"}\n'),
                    store=store,
                )
            )
    cases += [
        Case(
            "path-experiment-dotdot",
            "path-name",
            grid("run", "experiment=../../x", STORE),
            words=("experiment",),
        ),
        Case(
            "path-experiment-abs",
            "path-name",
            grid("run", "experiment={tmp}/evil", STORE),
            setup=trace_setup("name: evil\n", "evil.yaml"),
        ),
        Case("path-experiment-conf-model", "path-name", grid("plan", "experiment=../model/tiny")),
        Case("path-experiment-plan-dotdot", "path-name", grid("plan", "experiment=../../../../etc/hosts")),
        Case("path-name-confirm", "path-name", grid("confirm", "name=../../../advescape", STORE)),
        Case("path-session-confirm", "path-name", grid("confirm", "session_id=/abs/x", STORE)),
        Case("path-force-label", "path-name", grid("run", "run.force=[../../x]", *SMALL_RUN[1:])),
        Case(
            "path-sessions-compare",
            "path-name",
            grid("compare", "sessions=[../../a,../../b]", STORE),
            store="empty",
        ),
        Case("path-tune-model-dotdot", "path-name", ("-m", "experiments.tune", "model=../../../x")),
        Case(
            "path-tune-out-dir",
            "path-name",
            ("-m", "experiments.tune", "model=tiny", "out_dir=/proc/advescape"),
            timeout_s=45,
        ),
        Case("path-assets-only-dotdot", "path-name", ("-m", "assets", "--only", "../../x")),
        Case(
            "path-nul-name-yaml",
            "path-name",
            grid("report", "hydra.searchpath=[file://{tmp}/conf]", "experiment=evil", STORE),
            setup=trace_setup('# @package _global_\nname: "a\\0b"\n', "conf/experiment/evil.yaml"),
            store="empty",
        ),
        Case(
            "path-nul-session-yaml",
            "path-name",
            grid("run", "hydra.searchpath=[file://{tmp}/conf]", "experiment=evil", STORE),
            setup=trace_setup(
                '# @package _global_\ndefaults:\n  - smoke\nsession_id: "../\\0x"\n',
                "conf/experiment/evil.yaml",
            ),
        ),
    ]
    return cases


def secret_cases() -> list[Case]:
    cases = [
        Case(f"secret-store-{c}", "secret", grid(c, f"paths.store={CRED_URL}"), words=("credentials",))
        for c in ("run", "status", "summary", "report", "confirm")
    ]
    cases += [
        Case(
            "secret-compare-stores",
            "secret",
            grid("compare", f"stores=[{CRED_URL},{CRED_URL}2]"),
            words=("stores[0]",),
        ),
        Case(
            "secret-compare-second",
            "secret",
            grid("compare", f"stores=[{{store}},{CRED_URL}]"),
            words=("stores[1]",),
            store="empty",
        ),
        Case("secret-power", "secret", ("-m", "analysis.power", "--store", CRED_URL), words=("credentials",)),
        Case(
            "secret-groups",
            "secret",
            (
                "-m",
                "grid.plan.groups",
                "--store",
                CRED_URL,
                "--start-s",
                "60",
                "--block-s",
                "30",
                "--half-width",
                "0.1",
            ),
            words=("credentials",),
            stream="out",
        ),
        Case("secret-data-dir-run", "secret", grid("run", f"paths.data_dir={CRED_URL}", STORE)),
        Case("secret-data-dir-assets", "secret", ("-m", "assets", f"paths.data_dir={CRED_URL}")),
        Case(
            "secret-tune-store",
            "secret",
            ("-m", "experiments.tune", "model=tiny", f'grid_overrides=["paths.store={CRED_URL}"]'),
        ),
        Case("secret-http-store", "secret", grid("summary", f"paths.store=http://{KEY}:{SECRET}@host/x")),
        Case("secret-gs-store", "secret", grid("status", f"paths.store=gs://{KEY}:{SECRET}@bucket/x")),
        Case(
            "secret-endpoint-option",
            "secret",
            grid(
                "summary",
                "paths.store=s3://bucket/x",
                f"+paths.store_options.endpoint_override={KEY}:{SECRET}@127.0.0.1:1",
            ),
        ),
        Case(
            "secret-option-key",
            "secret",
            grid("summary", "paths.store=s3://bucket/x", f"+paths.store_options.secret_key={SECRET}"),
        ),
    ]
    return cases


def s3_cases() -> list[Case]:
    opts = ("+paths.store_options.endpoint_override={s3}", "+paths.store_options.scheme=http")
    cases = []
    for command in ("status", "summary", "report", "confirm"):
        cases.append(
            Case(
                f"s3-no-bucket-{command}",
                "s3",
                grid(command, "paths.store=s3://nosuchbucket/x", *opts),
                needs_s3=True,
            )
        )
        cases.append(
            Case(
                f"s3-no-prefix-{command}",
                "s3",
                grid(command, "paths.store=s3://advbucket/missing", *opts),
                needs_s3=True,
            )
        )
    cases += [
        Case(
            "s3-compare-missing",
            "s3",
            grid("compare", "stores=[s3://nosuchbucket/a,s3://advbucket/b]", *opts),
            needs_s3=True,
        ),
        Case(
            "s3-power-missing",
            "s3",
            ("-m", "analysis.power", "--store", "s3://nosuchbucket/x"),
            needs_s3=True,
        ),
        Case(
            "s3-unreachable-summary",
            "s3",
            grid(
                "summary",
                "paths.store=s3://bucket/x",
                "+paths.store_options.endpoint_override=127.0.0.1:1",
                "+paths.store_options.scheme=http",
            ),
        ),
    ]
    return cases


def model_cases() -> list[Case]:
    run = ("grid.models=[mine]", "+model.mine.path={tmp}/m", *SMALL_RUN[2:], STORE)
    only_config = model_setup({"config.json": SMOL_CONFIG})
    cases = [
        Case("model-empty-folder", "model", grid("run", *run), setup=model_setup({})),
        Case("model-only-config", "model", grid("run", *run), setup=only_config, words=("weights",)),
        Case(
            "model-damaged-safetensors",
            "model",
            grid("run", *run),
            # Preflight checks that weights are there, not their bytes (the stand-in engine's fixtures
            # write an empty file): the engine refuses them once, and the cell is not retried.
            setup=model_setup({**SMOL_FILES, "model.safetensors": b"\x00garbage" * 10}),
            expect=ENGINE_REFUSED,
            timeout_s=180,
        ),
        Case(
            "model-empty-safetensors",
            "model",
            grid("run", *run),
            # Preflight checks that weights are there, not their bytes (the stand-in engine's fixtures
            # write an empty file): the engine refuses them once, and the cell is not retried.
            setup=model_setup({**SMOL_FILES, "model.safetensors": b""}),
            expect=ENGINE_REFUSED,
            timeout_s=180,
        ),
        Case(
            "model-config-not-json",
            "model",
            grid("run", *run),
            setup=model_setup({"config.json": "{not json", "model.safetensors": b"x"}),
        ),
        Case(
            "model-relative-etc",
            "model",
            grid("run", "grid.models=[mine]", "+model.mine.path=../../../../etc", *SMALL_RUN[2:], STORE),
        ),
        Case(
            "model-missing",
            "model",
            grid("run", "grid.models=[mine]", "+model.mine.path={tmp}/nope", *SMALL_RUN[2:], STORE),
        ),
        Case(
            "model-is-file",
            "model",
            grid("run", "grid.models=[mine]", "+model.mine.path={tmp}/t.jsonl", *SMALL_RUN[2:], STORE),
            setup=trace_setup("x"),
        ),
        Case(
            "model-context-16384",
            "model",
            grid("run", *SMALL_RUN, "engine.max_model_len=16384"),
            words=("8192",),
        ),
        Case(
            "model-context-9000",
            "model",
            grid("run", *SMALL_RUN, "engine.max_model_len=9000"),
            words=("8192",),
        ),
        Case("model-tiny-path-dotdot", "model", grid("run", *SMALL_RUN, "model.tiny.path=../../../../etc")),
        Case("model-models-dir-missing", "model", grid("run", *SMALL_RUN, "paths.models_dir={tmp}/nope")),
    ]
    return cases


def store_cases() -> list[Case]:
    return [
        Case(
            "store-is-file-run",
            "store",
            grid("run", *SMALL_RUN[:1], "paths.store={tmp}/t.jsonl", *SMALL_RUN[2:]),
            setup=trace_setup("x"),
        ),
        Case(
            "store-is-file-summary",
            "store",
            grid("summary", "paths.store={tmp}/t.jsonl"),
            setup=trace_setup("x"),
        ),
        Case(
            "store-proc-run",
            "store",
            grid("run", *SMALL_RUN[:1], "paths.store=/proc/advstore", *SMALL_RUN[2:]),
        ),
        Case("store-missing-status", "store", grid("status", STORE)),
        Case("store-missing-summary", "store", grid("summary", STORE)),
        Case("store-missing-report", "store", grid("report", STORE)),
        Case("store-missing-compare", "store", grid("compare", "stores=[{store},{tmp}/other]")),
        Case("store-missing-power", "store", ("-m", "analysis.power", "--store", "{store}")),
        Case(
            "store-missing-groups",
            "store",
            (
                "-m",
                "grid.plan.groups",
                "--store",
                "{store}",
                "--start-s",
                "60",
                "--block-s",
                "30",
                "--half-width",
                "0.1",
            ),
            stream="out",
        ),
        Case(
            "store-no-room-run",
            "store",
            grid("run", *SMALL_RUN, "run.min_store_free_mb=1000000000"),
            words=("run.min_store_free_mb",),
        ),
        Case("store-compare-one", "store", grid("compare", "stores=[{store}]"), store="empty"),
        Case(
            "store-empty-power",
            "store",
            ("-m", "analysis.power", "--store", "{store}", "--draws", "200"),
            expect=USAGE,
            store="empty",
        ),
        Case("store-data-dir-missing-run", "store", grid("run", *SMALL_RUN, "paths.data_dir={tmp}/nodata")),
    ]


def control_cases() -> list[Case]:
    return [
        Case("control-plan-smoke", "control", grid("plan", "experiment=smoke"), expect=OK),
        Case("control-help", "control", grid("--help"), expect=OK),
        Case("control-run-help", "control", grid("run", "--help"), expect=OK),
        Case("control-summary-empty", "control", grid("summary", STORE), expect=OK, store="empty"),
        Case(
            "control-corpus-trace",
            "control",
            grid("corpus", "grid.corpora=[mine]", "+corpus.mine.path={tmp}/t.jsonl"),
            expect=OK,
            setup=trace_setup(
                '{"id": "a", "prompt": "hello there"}\n' * 1
                + "".join(f'{{"id": "{i}", "prompt": "p {i}"}}\n' for i in range(40))
            ),
        ),
    ]


def all_cases() -> list[Case]:
    return [
        *unknown_name_cases(),
        *override_cases(),
        *type_cases(),
        *range_cases(),
        *trace_cases(),
        *path_name_cases(),
        *secret_cases(),
        *s3_cases(),
        *model_cases(),
        *store_cases(),
        *control_cases(),
    ]


# -- snapshots -----------------------------------------------------------------------------------


def tree(root: Path, skip: Path | None = None) -> dict[str, tuple[int, int]]:
    """Every path under `root` (not under `skip`) with its size and mtime."""
    found: dict[str, tuple[int, int]] = {}
    if not root.exists():
        return found
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if skip is not None and (here == skip or skip in here.parents):
            dirnames[:] = []
            continue
        for name in [*dirnames, *filenames]:
            path = here / name
            if skip is not None and path == skip:
                continue
            with contextlib.suppress(OSError):
                st = path.lstat()
                stamp = (st.st_size, st.st_mtime_ns) if path.is_file() else (-1, 0)
                found[str(path.relative_to(root))] = stamp
    return found


def repo_state() -> set[str]:
    """New or changed paths in the repository that are not another engineer's, and results/'s tree."""
    out = subprocess.run(
        ["git", "status", "--porcelain", "-uall"], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout
    # New files only: tracked files change under other engineers' hands while this runs.
    lines = {
        line
        for line in out.splitlines()
        if line.startswith("??") and not any(p in line for p in NOT_OURS) and "adversarial" not in line
    }
    results = tree(REPO / "results")
    return lines | {f"results/{k}:{v}" for k, v in results.items()}


def diff(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    return sorted(k for k in after.keys() | before.keys() if before.get(k) != after.get(k))


# -- running one input case ----------------------------------------------------------------------


def fill(arg: str, tmp: Path, store: Path, s3: str) -> str:
    return (
        arg.replace("{tmp}", str(tmp))
        .replace("{store}", str(store))
        .replace("{model}", str(MODEL))
        .replace("{s3}", s3)
    )


def kill_tree(pid: int) -> None:
    """SIGKILL a process, its process group and every descendant (an engine runs in a group of its own)."""
    import psutil

    with contextlib.suppress(psutil.Error):
        below = psutil.Process(pid).children(recursive=True)
        for proc in below:
            with contextlib.suppress(psutil.Error, ProcessLookupError, PermissionError):
                os.killpg(os.getpgid(proc.pid), signal.SIGKILL)
            with contextlib.suppress(psutil.Error):
                proc.kill()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def run_process(
    argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float
) -> tuple[int | None, str, str]:
    """Run in its own process group; on timeout the whole group is killed (exit None)."""
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        out, err = proc.communicate(timeout=timeout_s)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid)
        out, err = proc.communicate()
        code = None
    return code, out.decode(errors="replace"), err.decode(errors="replace")


def base_env(s3_env: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "LEVER_GRID_"))}
    env.update(s3_env)
    env["PYTHONPATH"] = str(REPO)
    env["COLUMNS"] = "400"  # one error line stays one line
    return env


def judge_input(case: Case, code: int | None, out: str, err: str) -> tuple[str, list[str]]:
    problems = []
    if case.stream == "out":
        out, err = err, out
    lines = [line for line in err.splitlines() if line.strip()]
    if code is None:
        return "timeout", ["timed out"]
    if "Traceback" in out or "Traceback" in err:
        problems.append("traceback")
    if SECRET in out or SECRET in err or KEY in out or KEY in err:
        problems.append("secret printed")
    if code == 0:
        outcome = "ok"
    elif code == 2 and len(lines) == 1:
        outcome = REFUSED
    elif code == 2 and lines[0].startswith("error:") and all(ln.startswith("  ") for ln in lines[1:]):
        outcome = REFUSED_LIST
    elif code == 2 and any(ln.startswith("usage:") for ln in lines) and "error:" in lines[0] + lines[-1]:
        outcome = USAGE
    else:
        outcome = f"exit {code}, {len(lines)} stderr lines"
    if outcome == REFUSED_LIST and case.expect == REFUSED:
        pass
    elif code == 1 and case.expect == ENGINE_REFUSED:
        outcome = ENGINE_REFUSED
        if "not retried" not in out:
            problems.append("retried (no 'not retried' in the output)")
    elif outcome == OK and case.expect == REPORTED:
        outcome = REPORTED
        if not any(w.lower() in out.lower() for w in case.words):
            problems.append(f"the listing does not name {case.words}")
    elif outcome != case.expect:
        problems.append(f"expected {case.expect}, got {outcome}")
    if outcome in (REFUSED, REFUSED_LIST) and not any(w.lower() in err.lower() for w in case.words or ("",)):
        problems.append(f"line does not name {case.words}")
    return outcome, problems


def run_input(case: Case, root: Path, s3: str, s3_env: dict[str, str]) -> Result:
    tmp = Path(tempfile.mkdtemp(prefix="case-", dir=root))
    deep = tmp.joinpath(*DEPTH)
    cwd, store = deep / "cwd", deep / "store"
    cwd.mkdir(parents=True)
    if case.store == "empty":
        store.mkdir()
    if case.setup is not None:
        case.setup(tmp)
    argv = [PY, *(fill(a, tmp, store, s3) for a in case.argv)]
    before_tmp, before_store, before_repo = tree(tmp, skip=store), tree(store), repo_state()
    started = time.monotonic()
    code, out, err = run_process(argv, cwd, base_env(s3_env), case.timeout_s)
    wall = time.monotonic() - started
    outcome, problems = judge_input(case, code, out, err)
    if written := diff(before_tmp, tree(tmp, skip=store)):
        problems.append(f"wrote outside the store: {written[:3]}")
    if outcome not in (OK, REPORTED, ENGINE_REFUSED) and case.store == "none" and store.exists():
        problems.append("refused but left a store folder")
    if outcome not in (OK, REPORTED, ENGINE_REFUSED) and (changed := diff(before_store, tree(store))):
        problems.append(f"refused but the store changed: {changed[:3]}")
    if new := repo_state() - before_repo:
        problems.append(f"repository changed: {sorted(new)[:3]}")
    lines = [line for line in (err or out).splitlines() if line.strip()]
    shutil.rmtree(tmp, ignore_errors=True)
    return Result(
        case.id,
        case.group,
        "input",
        case.expect,
        outcome,
        not problems,
        problems,
        code,
        (lines[-1] if lines else "")[:300],
        round(wall, 1),
        argv[1:],
    )


@contextlib.contextmanager
def s3_server() -> Iterator[tuple[str, dict[str, str]]]:
    """The tests' local S3 stand-in with one bucket (advbucket) holding one unrelated object."""
    from tests.s3server import FAKE_CREDENTIALS, why_unavailable

    if why_unavailable() is not None:
        yield "", {}
        return
    from tests.s3server import moto_server

    os.environ.update(FAKE_CREDENTIALS)
    with moto_server() as endpoint:
        import pyarrow.fs as pafs

        host = endpoint.removeprefix("http://")
        fs = pafs.S3FileSystem(
            endpoint_override=host, scheme="http", region="us-east-1", allow_bucket_creation=True
        )
        fs.create_dir("advbucket")
        with fs.open_output_stream("advbucket/other/x.txt") as f:
            f.write(b"x")
        yield host, dict(FAKE_CREDENTIALS)


# -- faults --------------------------------------------------------------------------------------


@dataclass
class Driver:
    """A `grid run` driver subprocess in its own process group, its output to a file."""

    proc: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait(self, timeout_s: float) -> int | None:
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        kill_tree(self.proc.pid)
        self.proc.wait()


def start_driver(overrides: list[str], log: Path, env: dict[str, str] | None = None) -> Driver:
    handle = log.open("wb")
    proc = subprocess.Popen(
        [PY, "-m", "grid", "run", *overrides],
        cwd=REPO,
        stdout=handle,
        stderr=subprocess.STDOUT,
        env=env or base_env({}),
        start_new_session=True,
    )
    return Driver(proc, log)


def stub_inputs(root: Path) -> None:
    """A model folder and two small corpora for the stand-in engine (as tests/scheduling's)."""
    model = root / "models" / "SmolLM2-135M-Instruct"
    model.mkdir(parents=True)
    (model / "config.json").write_text(SMOL_CONFIG)
    (model / "model.safetensors").write_bytes(b"")
    for name in ("code_complete", "chat_bench"):
        rows = [{"id": f"{name}-{i}", "prompt": f"{name} prompt {i}"} for i in range(12)]
        write(root / "data" / "corpora" / f"{name}.jsonl", "".join(json.dumps(r) + "\n" for r in rows))


def stub_overrides(root: Path, store: Path, *extra: str) -> list[str]:
    return [
        "experiment=smoke",
        f"paths.store={store}",
        f"paths.models_dir={root / 'models'}",
        f"paths.data_dir={root / 'data'}",
        "ray.cpus_per_engine=1",
        f"engine.command=['{{python}}',-m,{STUB_MODULE}]",
        "engine.env={}",
        "engine.start_timeout_s=30",
        "load.num_prompts=6",
        "load.warmup_requests=1",
        "load.concurrency=3",
        "load.max_tokens=8",
        "grid.anchor.enabled=false",
        "~grid.num_prompts.chat_bench",
        "grid.engine_reuse=per_spec",
        "run.keep_invalid=true",
        "ray.max_in_flight=1",
        *extra,
    ]


def real_overrides(store: Path, *extra: str) -> list[str]:
    return [
        "experiment=smoke",
        f"paths.store={store}",
        "grid.levers=[van]",
        "grid.corpora=[code_complete]",
        "load.num_prompts=12",
        "load.max_tokens=32",
        "load.warmup_requests=2",
        "load.concurrency=4",
        "gates.min_window_s=1",
        "gates.min_requests=2",
        "gates.equivalence.min_prompts=12",
        "grid.anchor.enabled=false",
        "run.keep_invalid=true",
        "run.host_invalid_reruns=0",
        *extra,
    ]


def ok_cells(store: Path) -> dict[str, int]:
    from store.read import attempts

    counts: dict[str, int] = {}
    with contextlib.suppress(Exception):
        for a in attempts(store)[0]:
            if a.status == "ok":
                counts[a.cell_key] = counts.get(a.cell_key, 0) + 1
    return counts


def wait_for(predicate: Callable[[], bool], timeout_s: float, driver: Driver | None = None) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        if driver is not None and driver.proc.poll() is not None:
            return predicate()
        time.sleep(0.2)
    return False


def store_problems(store: Path, injected: tuple[str, ...] = ()) -> list[str]:
    """The store reads with pandas and DuckDB; no damaged ok attempt; no half-written (.tmp-) file."""
    import pandas as pd

    from store.read import connect, damaged, ok_files

    problems = []
    if not store.exists():
        return problems
    try:
        for name in ("requests.parquet", "summary.parquet"):
            for path in ok_files(store, name):
                pd.read_parquet(path)
        con = connect(store)
        bad = damaged(con)
        bad = bad[~bad["file"].astype(str).isin(injected)]
        if len(bad):
            problems.append(f"damaged parts: {bad['file'].tolist()[:3]}")
        views = [
            r[0] for r in con.execute("select view_name from duckdb_views() where not internal").fetchall()
        ]
        for view in views:
            con.execute(f'select count(*) from "{view}"').fetchone()
    except Exception as exc:  # the record says what failed; the pass goes on
        problems.append(f"store unreadable: {type(exc).__name__}: {str(exc)[:200]}")
    if half := [str(p) for p in store.rglob(".tmp-*")]:
        problems.append(f"half-written files: {half[:3]}")
    return problems


def last_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


RAY_WORDS = ("Failed to connect to GCS", "ray.exceptions", "RaySystemError", "(raylet)", "core_worker")


def output_problems(output: str, code: int | None, expected: tuple[int, ...]) -> list[str]:
    problems = []
    if code not in expected:
        problems.append(f"exit {code}, expected {expected}")
    if "Traceback" in output:
        problems.append("traceback")
    last = last_line(output)
    if any(w in last for w in RAY_WORDS):
        problems.append(f"last line is Ray's: {last[:120]}")
    return problems


@dataclass
class FaultRun:
    """What a fault function hands back: its outcome words and the problems it found."""

    outcome: str
    problems: list[str]
    code: int | None
    output: str
    injected: tuple[str, ...] = ()  # parts the fault damaged on purpose: readers must leave them out


def engine_pids(driver: Driver) -> list[int]:
    """The real vLLM API servers below the driver (its local Ray's workers start them)."""
    import psutil

    found = []
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(driver.proc.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                cmd = " ".join(child.cmdline())
                if (
                    "vllm" in cmd
                    and ("serve" in cmd or "entrypoints" in cmd)
                    and "EngineCore" not in child.name()
                ):
                    found.append(child.pid)
    return found


def measuring(store: Path, posted: int = 12) -> bool:
    """The measured load is under way: the engine's access log shows `posted` requests (warm-up's
    included). Its /metrics scrapes are no sign: the harness reads them before the load too."""
    logs = list((store / "logs").glob("*/*.log"))
    return bool(logs) and logs[-1].read_text(errors="replace").count("POST /v1/") >= posted


def summary_rows(store: Path) -> list[dict[str, object]]:
    import pandas as pd

    from store.read import ok_files

    rows: list[dict[str, object]] = []
    for path in ok_files(store, "summary.parquet"):
        rows += pd.read_parquet(path).to_dict("records")
    return rows


def failed_attempts(store: Path) -> list[str]:
    from store.read import attempts

    return [a.error or "" for a in attempts(store)[0] if a.status == "failed"]


def fault_stall(work: Path) -> FaultRun:
    """The real engine SIGSTOPped 40 s inside the measured window: the cell is INVALID, the stall named."""
    store = work / "store"
    driver = start_driver(real_overrides(store, "load.num_prompts=40"), work / "out.log")
    problems: list[str] = []
    if not wait_for(lambda: measuring(store), 300, driver):
        problems.append("never reached the measured load")
    else:
        pgids = {os.getpgid(p) for p in engine_pids(driver)}
        for pgid in pgids:
            os.killpg(pgid, signal.SIGSTOP)
        time.sleep(40)
        for pgid in pgids:
            os.killpg(pgid, signal.SIGCONT)
        if not pgids:
            problems.append("no engine found to stop")
    code = driver.wait(400)
    output = driver.output()
    problems += output_problems(output, code, (0,))
    rows = summary_rows(store)
    stalled = [
        r
        for r in rows
        if not r.get("valid")
        and r.get("gate_no_stall") is False
        and "engine stalled" in str(r.get("invalid_reasons"))
    ]
    if not stalled or "engine stalled" not in output:
        problems.append(
            f"no INVALID cell naming the stall: {[(r.get('valid'), r.get('invalid_reasons')) for r in rows]}"
        )
    stall = f"{stalled[0].get('stall_max_s', 0):.1f} s" if stalled else "none"
    reason = str(rows[0].get("invalid_reasons"))[:80] if rows else ""
    outcome = f"INVALID, stall {stall} named" if stalled else f"not stalled: {reason}"
    return FaultRun(outcome, problems, code, output)


def fault_engine_killed(work: Path) -> FaultRun:
    """The real engine SIGKILLed mid-load: the attempt is failed with the death named, the cell retried."""
    store = work / "store"
    driver = start_driver(
        real_overrides(store, "run.max_attempts=2", "load.num_prompts=40"), work / "out.log"
    )
    problems: list[str] = []
    if wait_for(lambda: measuring(store), 300, driver):
        for pid in engine_pids(driver):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    else:
        problems.append("never reached the measured load")
    code = driver.wait(400)
    output = driver.output()
    problems += output_problems(output, code, (0,))
    failed = failed_attempts(store)
    if len(failed) != 1:
        problems.append(f"{len(failed)} failed attempts, expected 1")
    if sum(ok_cells(store).values()) != 1:
        problems.append(f"ok attempts {ok_cells(store)}, expected one cell once")
    return FaultRun(f"failed {len(failed)}, then retried ok", problems, code, output)


def fault_engine_bad_arg(work: Path) -> FaultRun:
    """A real engine that will not start (an unknown flag): one line, failed once, not retried."""
    store = work / "store"
    driver = start_driver(
        real_overrides(store, "run.max_attempts=2", "engine.extra_args=[--no-such-flag-adv]"),
        work / "out.log",
    )
    code = driver.wait(300)
    output = driver.output()
    problems = output_problems(output, code, (1,))
    failed = failed_attempts(store)
    if len(failed) != 1:
        problems.append(f"{len(failed)} failed attempts, expected 1 (not retried)")
    if "not retried" not in output:
        problems.append("no 'not retried' in the output")
    return FaultRun(
        f"failed {len(failed)}, {'not retried' if len(failed) == 1 else 'retried'}", problems, code, output
    )


def fault_corpus_changed(work: Path) -> FaultRun:
    """A corpus file changed after the driver planned it: CorpusChanged, not retried; the others run."""
    stub_inputs(work)
    store = work / "store"
    over = stub_overrides(
        work, store, "+engine.env.STUB_DELAY_S=0.3", "grid.engine_reuse=per_corpus", "run.max_attempts=2"
    )
    driver = start_driver(over, work / "out.log")
    wait_for(lambda: bool(ok_cells(store)), 180, driver)
    corpus = work / "data/corpora/code_complete.jsonl"
    corpus.write_text(corpus.read_text().replace("prompt 3", "prompt three"))
    code = driver.wait(300)
    output = driver.output()
    problems = output_problems(output, code, (1,))
    failed = failed_attempts(store)
    changed = [e for e in failed if e.startswith("CorpusChanged")]
    if not changed:
        problems.append("no CorpusChanged attempt")
    if len(failed) != len(changed):
        problems.append(f"other failures: {failed}")
    return FaultRun(f"CorpusChanged x{len(changed)}, not retried", problems, code, output)


def fault_head_lost(work: Path) -> FaultRun:
    """The Ray head's gcs_server killed mid-run: own line, exit 1, ended_at, phases gone next run."""
    import psutil

    stub_inputs(work)
    store = work / "store"
    over = stub_overrides(work, store, "+engine.env.STUB_DELAY_S=0.3")
    driver = start_driver(over, work / "out.log")
    wait_for(lambda: bool(ok_cells(store)), 180, driver)
    gcs = [p for p in psutil.Process(driver.proc.pid).children(recursive=True) if p.name() == "gcs_server"]
    for p in gcs:
        p.kill()
    code = driver.wait(120)
    output = driver.output()
    problems = output_problems(output, code, (1,))
    if not gcs:
        problems.append("no gcs_server found")
    if "stopped: the Ray head was lost" not in output:
        problems.append("no 'stopped: the Ray head was lost' line")
    sessions = list((store / "sessions").glob("*.json"))
    if not sessions or not all(json.loads(s.read_text()).get("ended_at") for s in sessions):
        problems.append("session without ended_at")
    # The next run (resume) sweeps what is left and finishes.
    again = start_driver(over, work / "again.log")
    code2 = again.wait(300)
    problems += [f"resume: {p}" for p in output_problems(again.output(), code2, (0,))]
    if left := [p.name for p in (store / "phases").glob("*")] if (store / "phases").exists() else []:
        problems.append(f"phases left: {left}")
    return FaultRun(f"exit {code}, ended_at written, resume exit {code2}", problems, code, output)


def fault_signal(signum: int, expected: int) -> Callable[[Path], FaultRun]:
    def fault(work: Path) -> FaultRun:
        """SIGINT/SIGTERM to the driver's group mid-grid: interrupted cells, ended_at, the exit code."""
        stub_inputs(work)
        store = work / "store"
        over = stub_overrides(work, store, "+engine.env.STUB_DELAY_S=0.3")
        driver = start_driver(over, work / "out.log")
        wait_for(lambda: bool(ok_cells(store)), 180, driver)
        os.killpg(driver.proc.pid, signum)
        code = driver.wait(90)
        output = driver.output()
        problems = output_problems(output, code, (expected,))
        if "interrupted" not in output:
            problems.append("no interrupted count")
        sessions = list((store / "sessions").glob("*.json"))
        if not sessions or not all(json.loads(s.read_text()).get("ended_at") for s in sessions):
            problems.append("session without ended_at")
        again = start_driver(over, work / "again.log")
        code2 = again.wait(300)
        problems += [f"resume: {p}" for p in output_problems(again.output(), code2, (0,))]
        if sorted(ok_cells(store).values()) != [1, 1, 1, 1]:
            problems.append(f"after resume each cell once? {ok_cells(store)}")
        return FaultRun(f"exit {code}, interrupted, resumed exit {code2}", problems, code, output)

    return fault


def fault_driver_killed(work: Path) -> FaultRun:
    """The driver SIGKILLed mid-grid (a crash): the rerun does only the rest, no half-written rows."""
    stub_inputs(work)
    store = work / "store"
    over = stub_overrides(work, store, "+engine.env.STUB_DELAY_S=0.3")
    driver = start_driver(over, work / "out.log")
    wait_for(lambda: bool(ok_cells(store)), 180, driver)
    driver.kill()
    again = start_driver(over, work / "again.log")
    code = again.wait(300)
    output = again.output()
    problems = output_problems(output, code, (0,))
    if sorted(ok_cells(store).values()) != [1, 1, 1, 1]:
        problems.append(f"cells not each once: {ok_cells(store)}")
    return FaultRun(f"killed; resume exit {code}, every cell once", problems, code, output)


def fault_garbled_lease(work: Path) -> FaultRun:
    """A garbled lease on a measured cell: status says so without a false promise, a rerun is clean."""
    stub_inputs(work)
    store = work / "store"
    over = stub_overrides(work, store, "grid.levers=[van]")
    first = start_driver(over, work / "out.log")
    code0 = first.wait(300)
    key = next(iter(ok_cells(store)), "none")
    write(store / "leases" / f"{key}.json", b'{"owner": "x", garbled\x00')
    code_s, out, err = run_process([PY, "-m", "grid", "status", *over], REPO, base_env({}), 120)
    problems = [f"first run exit {code0}"] if code0 != 0 else []
    if "Traceback" in out + err:
        problems.append("status traceback")
    if "the next run takes it over" in out + err:
        problems.append("status promises a takeover")
    again = start_driver(over, work / "again.log")
    code = again.wait(300)
    output = again.output()
    problems += output_problems(output, code, (0,))
    if sorted(ok_cells(store).values()) != [1, 1]:
        problems.append(f"a measured cell was measured again: {ok_cells(store)}")
    return FaultRun(f"status exit {code_s}; rerun exit {code}, nothing remeasured", problems, code, output)


def fault_half_parquet(work: Path) -> FaultRun:
    """A half-written parquet part: status names it, the rerun measures that cell again, the store reads."""
    from store.read import attempts

    stub_inputs(work)
    store = work / "store"
    over = stub_overrides(work, store, "grid.levers=[van]")
    code0 = start_driver(over, work / "out.log").wait(300)
    victim = attempts(store)[0][0]
    part = victim.folder / "requests.parquet"
    part.write_bytes(part.read_bytes()[:100])
    code_s, out, err = run_process([PY, "-m", "grid", "status", *over], REPO, base_env({}), 120)
    problems = [f"first run exit {code0}"] if code0 != 0 else []
    if "Traceback" in out + err:
        problems.append("status traceback")
    if victim.cell_key[:8] not in out + err and "damaged" not in out + err:
        problems.append("status does not name the damaged part")
    again = start_driver(over, work / "again.log")
    code = again.wait(300)
    output = again.output()
    problems += output_problems(output, code, (0,))
    if victim.cell_key not in ok_cells(store) or ok_cells(store)[victim.cell_key] < 2:
        problems.append("the damaged cell was not measured again")
    outcome = f"status exit {code_s} names it; rerun exit {code}, measured again"
    return FaultRun(outcome, problems, code, output, (str(part),))


def fault_engine_hangs(work: Path) -> FaultRun:
    """An engine that never becomes ready: its start times out, the cells fail with the timeout named."""
    stub_inputs(work)
    store = work / "store"
    over = stub_overrides(
        work,
        store,
        "+engine.env.STUB_HANG_AT_START=1",
        "engine.start_timeout_s=3",
        "grid.levers=[van]",
        "run.max_attempts=1",
    )
    driver = start_driver(over, work / "out.log")
    code = driver.wait(300)
    output = driver.output()
    problems = output_problems(output, code, (1,))
    failed = failed_attempts(store)
    if not failed or not all("not ready after 3 s" in e for e in failed):
        problems.append(f"failures: {failed}")
    return FaultRun(f"start timeout, {len(failed)} failed", problems, code, output)


def fault_disk_full(work: Path) -> FaultRun:
    """The store fills up mid-run (a 3 MiB tmpfs, run.min_store_free_mb=0): stop, one reason, no half rows."""
    stub_inputs(work)
    mount = work / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], check=True)
    try:
        store = mount / "store"
        over = stub_overrides(
            work,
            store,
            "run.min_store_free_mb=0",
            "+engine.env.STUB_TOKENS=8",
            "load.num_prompts=10",
            "grid.repeats=4",
        )
        write(mount / "ballast", b"\x00" * (2 * 2**20 + 600 * 2**10))
        driver = start_driver(over, work / "out.log")
        code = driver.wait(400)
        output = driver.output()
        problems = output_problems(output, code, (1, 2))
        if "full" not in output and "space" not in output:
            problems.append("no line names the full store")
        problems += store_problems(store)
        return FaultRun(f"exit {code}: {last_line(output)[:80]}", problems, code, output)
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fault_no_room(work: Path) -> FaultRun:
    """A store with less room than a cell needs: refused before any engine starts, exit 2, one line."""
    stub_inputs(work)
    store = work / "store"
    driver = start_driver(stub_overrides(work, store, "run.min_store_free_mb=1000000000"), work / "out.log")
    code = driver.wait(120)
    output = driver.output()
    problems = output_problems(output, code, (2,))
    if output.count("error:") != 1:
        problems.append("not one error line")
    if list(store.glob("logs/*/*.log")):
        problems.append("an engine was started")
    return FaultRun("refused before launch", problems, code, output)


def fault_unwritable_cell(work: Path) -> FaultRun:
    """A file where a cell's folder must go: that cell fails, the others' results are kept."""
    stub_inputs(work)
    store = work / "store"
    over = stub_overrides(work, store, "run.max_attempts=1")
    os.environ["PYTHONPATH"] = str(REPO)
    from grid.config.compose import compose_config
    from grid.config.expand import expand, to_config
    from store.layout import StoreLayout

    cells = StoreLayout(store).root / "cells"
    cells.mkdir(parents=True)
    for cell in expand(to_config(compose_config(over))):
        if cell.engine_spec.lever.name == "suffix":
            (cells / cell.key).write_text("not a folder")
    driver = start_driver(over, work / "out.log")
    code = driver.wait(300)
    output = driver.output()
    problems = output_problems(output, code, (1,))
    if len(ok_cells(store)) != 2:
        problems.append(f"van cells not kept: {ok_cells(store)}")
    return FaultRun(f"suffix cells failed, van kept (exit {code})", problems, code, output)


FAULTS: list[tuple[str, str, Callable[[Path], FaultRun]]] = [
    ("fault-engine-sigstop-40s", "real-engine", fault_stall),
    ("fault-engine-sigkill", "real-engine", fault_engine_killed),
    ("fault-engine-bad-arg", "real-engine", fault_engine_bad_arg),
    ("fault-corpus-changed", "stand-in", fault_corpus_changed),
    ("fault-ray-head-lost", "stand-in", fault_head_lost),
    ("fault-driver-sigint", "stand-in", fault_signal(signal.SIGINT, 130)),
    ("fault-driver-sigterm", "stand-in", fault_signal(signal.SIGTERM, 143)),
    ("fault-driver-sigkill-resume", "stand-in", fault_driver_killed),
    ("fault-garbled-lease", "stand-in", fault_garbled_lease),
    ("fault-half-written-parquet", "stand-in", fault_half_parquet),
    ("fault-engine-hangs-at-start", "stand-in", fault_engine_hangs),
    ("fault-disk-full-mid-run", "stand-in", fault_disk_full),
    ("fault-store-no-room", "stand-in", fault_no_room),
    ("fault-cell-folder-unwritable", "stand-in", fault_unwritable_cell),
]


def run_fault(fid: str, group: str, fault: Callable[[Path], FaultRun], root: Path) -> Result:
    work = Path(tempfile.mkdtemp(prefix="fault-", dir=root))
    before = repo_state()
    started = time.monotonic()
    try:
        got = fault(work)
    except Exception as exc:  # the pass records a broken fault and goes on
        got = FaultRun("script error", [f"{type(exc).__name__}: {exc}"], None, "")
    problems = list(got.problems)
    for store in (work / "store",):
        problems += [p for p in store_problems(store, got.injected) if p not in problems]
    if new := repo_state() - before:
        problems.append(f"repository changed: {sorted(new)[:3]}")
    wall = time.monotonic() - started
    (root / f"{fid}.log").write_text(got.output)
    shutil.rmtree(work, ignore_errors=True)
    return Result(
        fid,
        group,
        "fault",
        "clean",
        got.outcome,
        not problems,
        problems,
        got.code,
        last_line(got.output)[:300],
        round(wall, 1),
    )


# -- report --------------------------------------------------------------------------------------


def print_table(results: list[Result]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="adversarial pass")
    for col in ("id", "group", "expect", "outcome", "pass", "exit", "s", "problems"):
        table.add_column(col)
    for r in results:
        table.add_row(
            r.id,
            r.group,
            r.expect,
            r.outcome,
            "PASS" if r.passed else "FAIL",
            str(r.exit_code),
            f"{r.wall_s:.0f}",
            "; ".join(r.problems)[:160],
        )
    Console(width=220).print(table)


def summary_line(results: list[Result], wall_s: float) -> str:
    inputs = [r for r in results if r.kind == "input"]
    faults = [r for r in results if r.kind == "fault"]
    refused = sum(r.outcome == REFUSED for r in inputs)
    listed = sum(r.outcome == REFUSED_LIST for r in inputs)
    reported = sum(r.outcome == REPORTED for r in inputs)
    engine = sum(r.outcome == ENGINE_REFUSED for r in inputs)
    usage = sum(r.outcome == USAGE for r in inputs)
    failed = [r.id for r in results if not r.passed]
    return (
        f"{len(inputs)} inputs: {refused} refused (exit 2, one line), {listed} refused with one line per "
        f"problem (exit 2), {usage} usage errors (exit 2), {reported} named in a listing (exit 0), "
        f"{engine} failed at the engine's start, not retried (exit 1), "
        f"{sum(r.outcome == OK for r in inputs)} ok; {len(faults)} faults: "
        f"{sum(r.passed for r in faults)} clean; {len(failed)} failed"
        f"{': ' + ', '.join(failed) if failed else ''}; "
        f"{wall_s / 60:.1f} min"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", action="store_true", help="only the bad inputs")
    parser.add_argument("--faults", action="store_true", help="only the faults")
    parser.add_argument("--only", default="", help="only cases whose id contains this")
    parser.add_argument("--json", type=Path, help="write every case's record here")
    parser.add_argument(
        "--keep", type=Path, help="keep fault logs in this folder (default: a temp one, removed)"
    )
    args = parser.parse_args(argv)
    both = not args.inputs and not args.faults
    root = Path(tempfile.mkdtemp(prefix="adversarial-"))
    started = time.monotonic()
    results: list[Result] = []
    if args.inputs or both:
        cases = [c for c in all_cases() if args.only in c.id]
        with s3_server() as (s3, s3_env):
            for case in cases:
                if case.needs_s3 and not s3:
                    results.append(
                        Result(
                            case.id,
                            case.group,
                            "input",
                            case.expect,
                            "skipped: no local S3",
                            False,
                            ["no local S3"],
                        )
                    )
                    continue
                results.append(run_input(case, root, s3, s3_env))
                r = results[-1]
                print(
                    f"{'PASS' if r.passed else 'FAIL'} {r.id}: {r.outcome} {'; '.join(r.problems)}",
                    flush=True,
                )
    if args.faults or both:
        for fid, group, fault in FAULTS:
            if args.only in fid:
                results.append(run_fault(fid, group, fault, args.keep or root))
                r = results[-1]
                print(
                    f"{'PASS' if r.passed else 'FAIL'} {r.id}: {r.outcome} {'; '.join(r.problems)}",
                    flush=True,
                )
    wall = time.monotonic() - started
    print_table(results)
    line = summary_line(results, wall)
    print(line)
    if args.json:
        args.json.write_text(
            json.dumps(
                {"summary": line, "wall_s": round(wall, 1), "cases": [asdict(r) for r in results]}, indent=1
            )
        )
    shutil.rmtree(root, ignore_errors=True)
    return 0 if all(r.passed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
