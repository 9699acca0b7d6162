"""Issue 47 item 7: one rule each, imported where it is used; the report's model paths read as paths."""

from __future__ import annotations

import ast
import json

import numpy as np
import pandas as pd
from scipy.stats import t as student_t

from analysis import blocks, decision
from analysis.measured import model_line
from vocab.paths import project_path

LATEST_USERS = ("analysis/summary.py", "analysis/verdicts.py", "grid/checks/corpus_resume.py")


def test_the_latest_attempt_rule_is_typed_once():
    """analysis/load.py's LATEST is the rule; the modules that pick a cell's latest attempt import it."""
    for name in LATEST_USERS:
        text = project_path(name).read_text()
        assert "row_number()" not in text, name
        assert "LATEST.format(" in text, name


def test_blocks_takes_its_t_quantile_from_decision():
    tree = ast.parse(project_path("analysis/blocks.py").read_text())
    imported = {(n.module, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert ("analysis.decision", "t_quantile") in imported
    assert not any(module == "scipy.stats" for module, _ in imported)
    logs = np.log(np.array([1.10, 1.14, 1.08, 1.12]))
    ratio, lo, hi = blocks.interval(logs, 0.9)
    half = student_t.ppf(0.95, 3) * np.std(logs, ddof=1) / 2
    assert np.isclose(lo, np.exp(logs.mean() - half)) and np.isclose(hi, np.exp(logs.mean() + half))
    assert decision.t_quantile(0.95, 3) == student_t.ppf(0.95, 3)
    assert np.isclose(ratio, np.exp(logs.mean()))


def test_a_models_dir_path_reads_as_a_path_not_a_placeholder():
    config = json.dumps({"model": {"path": "{models_dir}/SmolLM2-135M-Instruct"}})
    hub = json.dumps({"model": {"path": "HuggingFaceTB/SmolLM2-135M-Instruct"}})
    cells = pd.DataFrame({"model": ["tiny", "smol"], "config_json": [config, hub]})
    line = model_line(cells)
    assert "{models_dir}" not in line
    assert "tiny (SmolLM2-135M-Instruct in paths.models_dir)" in line
    assert "smol (HuggingFaceTB/SmolLM2-135M-Instruct)" in line
