"""The run config: composed from conf/ and the overrides (compose.py), its named specs (catalog.py),
its cells (expand.py)."""
