"""Before any launch: every problem one line (preflight.py), prompts new to their engine (prompt_audit.py),
prompts that fit the context (prompt_fit.py), corpora unchanged since the done cells (corpus_resume.py)."""
