"""Helpers shared by the tiers' tests (and the benchmarks): no tests here."""
