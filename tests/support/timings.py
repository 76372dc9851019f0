"""Start-up times of the session's servers, printed at the end of the run (tests/conftest.py)."""

#: What started (with its unit) -> seconds.
TIMINGS: dict[str, float] = {}
