"""`python -m assets [overrides]`: prepare the embedded model and corpora (idempotent)."""

from __future__ import annotations

import sys

from assets import corpora, smollm2
from grid.compose import compose_config
from grid.errors import GridError
from grid.paths import project_path


def main(argv: list[str]) -> int:
    try:
        cfg = compose_config(argv)
        corpora.ensure(project_path(cfg.paths.data_dir))
        smollm2.ensure(project_path(cfg.paths.models_dir))
    except GridError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
