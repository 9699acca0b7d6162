"""The commands' tables and pages (`python -m grid`, grid/__main__.py): plan, status, report,
compare, corpus."""
