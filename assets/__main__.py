"""`python -m assets [overrides]`: prepare the embedded model and corpora (idempotent).

The model comes first: its tokenizer caps the corpora to the composed config's
max_model_len - max_tokens (e.g. `python -m assets load=study engine.max_model_len=16384`).
"""

from __future__ import annotations

import sys

from assets import corpora, dummy_models, smollm2
from grid.compose import compose_config
from vocab.errors import ConfigError, GridError
from vocab.paths import project_path


def main(argv: list[str]) -> int:
    try:
        cfg = compose_config(argv)
        model_dir = smollm2.ensure(project_path(cfg.paths.models_dir))
        dummy_models.ensure(project_path(cfg.paths.models_dir))
        max_prompt_tokens = int(cfg.engine.max_model_len) - int(cfg.load.max_tokens)
        if max_prompt_tokens <= 0:
            raise ConfigError(f"engine.max_model_len must exceed load.max_tokens (cap {max_prompt_tokens})")
        corpora.ensure(project_path(cfg.paths.data_dir), model_dir, max_prompt_tokens)
    except GridError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
