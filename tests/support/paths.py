"""Where things are, from the tests' point of view (one place, so that moving a test moves no path)."""

from pathlib import Path

#: The repository's root (pyproject.toml, README.md, prdist/, flows/, deploy/, benchmarks/).
ROOT = Path(__file__).resolve().parents[2]
#: The ReVerb open-IE evaluation data, next to the worktree (``../shared/data``).
REVERB = ROOT.parent / "shared" / "data" / "reverb-emnlp2011"
#: Label Studio's own environment (``make .venv-label-studio/.installed``).
LABEL_STUDIO_VENV = ROOT / ".venv-label-studio"
