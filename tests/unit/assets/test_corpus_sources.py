from email.message import Message

import pytest

from assets.corpus_sources import (
    CODE_PACKAGES,
    COMPLETE_PACKAGES,
    DOC_PACKAGES,
    documents,
    license_of,
    source,
)
from vocab.errors import ConfigError

PERMISSIVE = ("MIT", "BSD", "Apache", "ISC", "PSF")


def meta(**fields) -> Message:
    message = Message()
    for key, value in fields.items():
        for item in value if isinstance(value, list) else [value]:
            message[key.replace("_", "-")] = item
    return message


def test_license_prefers_spdx_then_field_then_classifier():
    assert license_of(meta(License_Expression="MIT", License="whatever")) == "MIT"
    assert license_of(meta(License="Apache 2.0")) == "Apache-2.0"
    long_text = "Copyright (c) someone\nPermission is hereby granted..."
    classifier = "License :: OSI Approved :: BSD License"
    assert license_of(meta(License=long_text, Classifier=[classifier])) == "BSD License"
    assert license_of(meta()) == "unknown"


@pytest.mark.parametrize("package", sorted(set(CODE_PACKAGES + COMPLETE_PACKAGES + DOC_PACKAGES)))
def test_every_listed_package_is_installed_and_permissive(package):
    licence = source(package).license
    assert any(word in licence for word in PERMISSIVE), licence


def test_missing_package_says_how_to_pin_it():
    with pytest.raises(ConfigError, match=r"corpus_pins\.txt"):
        source("no-such-package-here")


def test_evaluation_suites_give_only_their_readmes():
    paths = [path for _, path, _ in documents("lm-eval")]
    assert len(paths) > 100
    assert all(p == "README (METADATA)" or p.endswith("/README.md") for p in paths)
