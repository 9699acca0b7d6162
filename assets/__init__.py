"""Embedded-default assets: the model and corpora, built from installed PyPI packages."""
