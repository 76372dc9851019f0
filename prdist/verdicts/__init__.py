"""Verdicts: how annotators' votes make one label, verdict sources with a role, and bounds as gold says it (pure, no I/O)."""
