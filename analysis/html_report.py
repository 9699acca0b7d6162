"""One self-contained HTML page for a Study: tables as HTML, figures as inline base64 PNG.

No external CSS, scripts or images: the file can be mailed or archived and opens offline.
"""

from __future__ import annotations

import base64
import html
import io
import math

import pandas as pd
from matplotlib.figure import Figure

from analysis import blocks, figures, variance
from analysis.confirmation import confirmation_words
from analysis.final import geomean_words
from analysis.gpu_time import share_line
from analysis.measured import WINDOW, engine_line, load_rows, model_line
from analysis.sessions import session_summary
from analysis.study import Study
from analysis.summary import PAIR_EXPORT_HEADERS, block_verdicts, config_lever_label

STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: right; }
th { background: #eee; }
td:first-child, th:first-child, td:last-child { text-align: left; }
.note { color: #555; }
img { max-width: 100%; }
"""

TABLE1_HEADERS = {
    "model": "model",
    "final_lever": "final lever",
    "deploy": "deploy",
    "confirmed_x": "x over van (held out: the figure to deploy on)",
    "confirmed_ci_lo": "held-out 90% CI low",
    "confirmed_ci_hi": "held-out 90% CI high",
    "confirmed_n": "held-out n",
    "confirmed_label": "held-out label",
    "confirmed_noise_terms": "held-out interval carries",
    "confirmation": "confirmation",
    "confirmed_power": "held-out power (what it could detect)",
    "confirmed_invalid_left_out": "held-out: INVALID cells left out",
    "van_tok_per_s": "van tok/s",
    "final_tok_per_s": "final tok/s",
    "scored_on": "tok/s scored on",
    "speedup_vs_van": "x over van (selection: reads high)",
    "ci_lo": "selection {pct} CI low",
    "ci_hi": "selection {pct} CI high",
    "n_value": "selection n final",
    "n_reference": "selection n van",
    "label": "selection label",
    "verdict": "selection verdict",
    "noise_terms": "selection interval carries",
    "invalid_left_out": "selection: INVALID cells left out",
    "also_differs": "selection: what else its engines ran with unlike van's",
    "van_ran_with": "van ran with (the van x over van is over)",
}
# Table 1 in three parts, each narrow enough for a 1280 px window (issue 47; tests/report holds it with
# a headless browser), read from the top as the one table was read from the left: the held-out figure,
# then the tok/s the choice was scored on (and what else those engines ran with), then the selection's
# figure with the van it is over.
TABLE1_PARTS = (
    (
        "Table 1a, held out: the figure to deploy on",
        ["model", "final_lever", "deploy", "confirmed_x", "confirmed_ci_lo", "confirmed_ci_hi", "confirmed_n",
         "confirmed_label", "confirmed_noise_terms", "confirmation", "confirmed_power",
         "confirmed_invalid_left_out"],
    ),
    (
        "Table 1b, what the choice was scored on",
        ["model", "final_lever", "van_tok_per_s", "final_tok_per_s", "scored_on", "also_differs"],
    ),
    (
        "Table 1c, the selection's figure (reads high)",
        ["model", "final_lever", "speedup_vs_van", "ci_lo", "ci_hi", "n_value", "n_reference", "label",
         "verdict", "noise_terms", "invalid_left_out", "van_ran_with"],
    ),
)  # fmt: skip
BEST_K_COLUMNS = ["model", "corpus", "lever", "best_k", "best_tok_per_s", "rule", "compared_k", "rel_diff",
                  "ci_lo", "ci_hi", "n_value", "n_reference", "label", "verdict"]  # fmt: skip
DRIFT_COLUMNS = ["session_id", "model", "corpus", "lever", "anchor_start_tok_per_s", "anchor_end_tok_per_s",
                 "drift_rel"]  # fmt: skip


NO_PHASES = "GPU time: no cell recorded its phases."
RULE_NOTE = (
    "Read Table 1 from the top: 1a the held-out figure, 1b the tok/s the choice was scored on, 1c the "
    "selection's figure. x over van (held out): the held-out confirmation "
    "(python -m grid confirm; "
    "experiment=final runs it at the end of its run): the final configuration and van measured again in a "
    "fresh session, on fresh engines, with a prompt seed the selection never drew, judged on those cells "
    "alone; 'confirmed' only when its 90% interval lies wholly above 1 + that session's drift band, and "
    "only then does deploy name the lever (else van). That is the figure to deploy on "
    "(analysis/confirmation.py). Its power column says what the confirmation could detect from its own "
    "interval's spread: 'low' when the figure shown is below the gain it finds 80% of the time, and a "
    "figure confirmed at low power reads high (analysis/detectable.py). van tok/s and final tok/s are what "
    "the choice was scored on (tok/s scored on: the mix corpus, or a geometric mean over corpora that no "
    "single cell measured as such; the per-corpus table below has each corpus's own). The selection's x "
    "over van is the figure the final lever was chosen on, the best of several noisy levers, so it reads "
    "high (the winner's curse): never a figure to deploy on. Every x over van is a ratio of geometric means "
    "over repeats with its two-sided t-interval on log ratios (paired by session and repeat where both "
    "sides have them, Welch otherwise); label 'real gain' / 'real loss' only when the whole interval lies "
    "beyond the drift band, 'not judged (n<2)' with fewer than 2 repeats on a side, 'not judged (drift "
    "unknown)' without a known drift band (analysis/decision.py); n: the repeats behind it; 'interval "
    "carries': the noise terms its interval holds, each once (launch+block: every repeat is a launch of "
    "its own, so one launch's offset and one block's noise; +session when unpaired sides come from "
    "different sessions). The selection's intervals are at {pct}. Every engine's effective configuration "
    "is read from its log (analysis/effective.py): 'also differs' names what else the final lever's "
    "scored cells ran with unlike van's, beyond what the lever changes by design (e.g. model runner V2 vs "
    "V1: the ratio then holds that change too); 'van ran with' is the van each x over van is over; an "
    "NVFP4 lever whose engines ran it through Marlin is shown as the W4A16 it ran, and a dynamic-K lever "
    "whose K never moved as 'fixed K in effect'. An INVALID cell is in no figure; 'INVALID cells left "
    "out' names those of the two configurations a figure would have held (analysis/repeats.py)."
)


def png_data_uri(fig: Figure, dpi: int = 100) -> str:
    """The figure as a data: URI (base64 PNG), for an <img> that needs no file beside the page."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _cell(value: object) -> object:
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:,.3f}" if abs(value) < 10 else f"{value:,.1f}"
    if value is None or value is pd.NA:
        return "-"
    if isinstance(value, list | tuple):
        return ", ".join(str(v.get("name", v)) if isinstance(v, dict) else str(v) for v in value) or "-"
    return value


def table_html(frame: pd.DataFrame, columns: list[str] | None = None, headers: dict | None = None) -> str:
    """`frame` (only `columns` that exist) as an escaped HTML table with readable numbers."""
    if frame.empty:
        return "<p class='note'>(none)</p>"
    present = [c for c in (columns or list(frame.columns)) if c in frame]
    shown = frame[present].astype(object).map(_cell).rename(columns=headers or {})
    return shown.to_html(index=False, escape=True, border=0)


def _figure(fig: Figure, alt: str) -> str:
    return f"<img alt='{html.escape(alt)}' src='{png_data_uri(fig)}'>"


def table1_shown(table: pd.DataFrame) -> pd.DataFrame:
    """Table 1 as the page shows it: a tok/s that is a geometric mean over corpora says so in its cell
    (no single cell measured it; the per-corpus table has each corpus's own)."""
    if table.empty or "scored_on" not in table:
        return table
    shown = table.astype(object)
    basis = shown["scored_on"].astype(str)
    pooled = basis.str.contains("geometric mean over") & ~basis.str.contains("over 1 corpora")
    for column in ("van_tok_per_s", "final_tok_per_s"):
        shown.loc[pooled, column] = [
            f"{_cell(v)} (geometric mean over corpora, not one cell's)" for v in shown.loc[pooled, column]
        ]
    return shown


def table1_html(table: pd.DataFrame, pct: str) -> str:
    """Table 1 on the page: its parts (TABLE1_PARTS) one above the other, in one block (#table1)."""
    if table.empty:
        return "<div id='table1'><p class='note'>(none)</p></div>"
    shown = table1_shown(table)
    headers = {k: v.format(pct=pct) for k, v in TABLE1_HEADERS.items()}
    parts = [
        f"<h3>{html.escape(caption)}</h3>{table_html(shown, columns, headers)}"
        for caption, columns in TABLE1_PARTS
    ]
    return f"<div id='table1'>{''.join(parts)}</div>"


def figure_1(table1: pd.DataFrame) -> str:
    """Figure 1, or why there is none: it draws only models whose final lever is not van."""
    why = figures.speedup_nothing_to_draw(table1)
    if why:
        return f"<p class='note'>Figure 1 (x over van per model) is not drawn: {html.escape(why)}.</p>"
    return _figure(figures.speedup_bars(table1), "Figure 1")


PER_CORPUS_HEADERS = {
    "model": "model",
    "corpus": "corpus",
    "lever": "lever",
    "k": "K",
    "n": "n valid",
    "output_tok_per_s": "out tok/s (median)",
    "ttft_ms_p50": "TTFT p50 ms (median)",
    "tpot_ms_p50": "TPOT p50 ms (median)",
}


def per_corpus(measured: pd.DataFrame) -> pd.DataFrame:
    """Per model x corpus x lever x K: VALID cells' medians of out tok/s, TTFT p50 and TPOT p50."""
    columns = [c for c in ("output_tok_per_s", "ttft_ms_p50", "tpot_ms_p50") if c in measured]
    if measured.empty or not columns:
        return pd.DataFrame(columns=list(PER_CORPUS_HEADERS))
    valid = measured[measured["valid"].fillna(False).astype(bool)] if "valid" in measured else measured
    keys = ["model", "corpus", "lever", "k"]
    table = valid.groupby(keys, dropna=False)[columns].median()
    table.insert(0, "n", valid.groupby(keys, dropna=False).size())
    table = table.reset_index()
    # The lever as it ran: W4A16 for an NVFP4 lever on Marlin, 'fixed K in effect' (analysis/effective.py).
    table["lever"] = [
        config_lever_label(valid, m, c, lv, k)
        for m, c, lv, k in zip(table["model"], table["corpus"], table["lever"], table["k"], strict=True)
    ]
    return table


def _folded(summary: str, body: str) -> str:
    """A raw table folded away: one click opens it."""
    return f"<details><summary>{html.escape(summary)}</summary>{body}</details>"


def launch_sections(measured: pd.DataFrame) -> list[str]:
    """The variance components per model and lever and, where levers shared a launch, the
    paired-by-block ratios; nothing for a store whose cells record no engine launch."""
    if "engine_launch_id" not in measured or not measured["engine_launch_id"].notna().any():
        return []
    components = variance.variance_components(measured)
    parts = ["<h2>Variance components</h2>"]
    if components.empty:
        return [*parts, f"<p class='note'>{html.escape(components.attrs.get('note', 'none'))}</p>"]
    shown = pd.DataFrame(variance.display_rows(components), columns=variance.DISPLAY_HEADERS)
    parts += [f"<p class='note'>{html.escape(variance.DISPLAY_NOTE)}.</p>", table_html(shown)]
    pairs = blocks.paired_by_block(measured)
    if not pairs.empty:
        rows = [[*r, v] for r, v in zip(blocks.display_rows(pairs), block_verdicts(pairs), strict=True)]
        shown = pd.DataFrame(rows, columns=PAIR_EXPORT_HEADERS)
        parts += ["<h3>Paired by block</h3>", f"<p class='note'>{html.escape(blocks.PAIR_NOTE)}.</p>"]
        parts.append(table_html(shown))
    return parts


def ran_as(study: Study) -> dict[str, str]:
    """Per model whose final lever ran other than its name says (Table 1's final lever: W4A16 on
    Marlin, fixed K in effect; analysis/study.py), the words added to its answer."""
    if study.table1.empty or "final_label" not in study.final:
        return {}
    named = dict(zip(study.final["model"], study.final["final_label"], strict=True))
    return {
        m: f"; it ran as {shown}"
        for m, shown in zip(study.table1["model"], study.table1["final_lever"], strict=True)
        if isinstance(shown, str) and shown != named.get(m)
    }


def flagged(flag: object) -> str:
    """'; 1 of 3 van cells INVALID, left out of the ratio' after an answer, '' where no cell was."""
    return f"; {flag}" if isinstance(flag, str) and flag else ""


def _answers(study: Study) -> str:
    if study.final.empty:
        if study.measured.empty:
            return "<p>No cells measured yet.</p>"
        return (
            f"<p>No answer: none of the {len(study.measured)} measured cells is VALID (each INVALID one is "
            "named in the notes with its reasons).</p>"
        )
    answers = study.final.get("answer", pd.Series(dtype=object)).dropna()
    held_out = {
        r["model"]: confirmation_words(r) + flagged(r.get("confirmed_invalid_left_out"))
        for r in study.confirmation.to_dict("records")
    }
    ran = ran_as(study)
    invalid = {r["model"]: flagged(r.get("invalid_left_out")) for r in study.table1.to_dict("records")}
    items = "".join(
        (f"<li>held-out confirmation: {html.escape(held_out[m])}<br>" if m in held_out else "<li>")
        + f"selection (reads high): {html.escape(str(a) + ran.get(m, '') + invalid.get(m, ''))}</li>"
        for m, a in zip(study.final.loc[answers.index, "model"], answers, strict=True)
    )
    return f"<ul>{items}</ul><p>{html.escape(geomean_words(study.table1))}</p>"


def measured_section(study: Study) -> list[str]:
    """What was measured: engine build, models, load per corpus, the window and what out tok/s is."""
    return [
        "<h2>What was measured</h2>",
        f"<p>{html.escape(engine_line(study.measured, study.sessions))}; "
        f"{html.escape(model_line(study.measured))}.</p>",
        table_html(load_rows(study.measured)),
        f"<p class='note'>{html.escape(WINDOW)}</p>",
    ]


def render_report(study: Study, title: str) -> str:
    """The whole page: answers in words, Table 1, Figures 1-3, best K, drift, variance components (where
    cells record their launch), sessions, equivalence."""
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in study.notes) or "<li>none</li>"
    # The selection's intervals are at the study's confidence (above 90% under sequential looks);
    # the held-out confirmation's stay at 90% (its own single look).
    pct = f"{study.confidence:.1%}".replace(".0%", "%")
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>",
        "<h2>Answer</h2>",
        _answers(study),
        f"<h3>Notes</h3><ul class='note'>{notes}</ul>",
        *measured_section(study),
        f"<p class='note'>{html.escape(share_line(study.measured) or NO_PHASES)}</p>",
        "<h2>Table 1: final lever per model</h2>",
        f"<p class='note'>{html.escape(RULE_NOTE.format(pct=pct))}</p>",
        table1_html(study.table1, pct),
        figure_1(study.table1),
        "<h2>Per corpus: throughput and latency</h2>",
        "<p class='note'>Medians over each configuration's VALID cells (repeats); TTFT and TPOT are each "
        "cell's p50 over its measured requests. Comparisons with their intervals are in Table 1 and the "
        "best-K table.</p>",
        table_html(per_corpus(study.measured), list(PER_CORPUS_HEADERS), PER_CORPUS_HEADERS),
        "<h2>Best K per model x corpus</h2>",
        "<p class='note'>Smallest K over which the top K is no real gain (ties within noise go to the "
        "smaller K); interval and label: best K vs the other.</p>",
        table_html(study.best_k, BEST_K_COLUMNS),
        _figure(figures.best_k_heatmap(study.best_k), "Figure 2")
        if not study.best_k.empty
        else "<p class='note'>Figure 2 (best K per model x corpus) is not drawn: no lever was swept over "
        "several K.</p>",
        "<h2>Drift: anchor runs per session</h2>",
        "<p class='note'>drift_rel = (max - min) / mean of the session's valid anchor runs; a comparison's "
        "band is the root mean square of the log differences of every anchor pair of its sessions, or the "
        "spread of their anchor means if larger (analysis/drift.py).</p>",
        table_html(study.drift, DRIFT_COLUMNS),
        _figure(figures.anchor_drift(study.drift), "Figure 3")
        if not study.drift.empty
        else "<p class='note'>Figure 3 (anchor throughput per session) is not drawn: no anchor runs in "
        "these sessions.</p>",
        *launch_sections(study.measured),
        "<h2>Sessions</h2>",
        _folded(
            f"{len(study.sessions)} session fingerprints (hosts, GPUs, versions)",
            table_html(session_summary(study.sessions)),
        ),
    ]
    if not study.equivalence.empty:
        parts += [
            "<h2>Output equivalence</h2>",
            _folded(f"{len(study.equivalence)} verdicts (every column)", table_html(study.equivalence)),
        ]
    parts.append("</body></html>")
    return "\n".join(parts)
