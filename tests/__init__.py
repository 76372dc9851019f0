"""prdist's tests: a regular package, so that worker processes unpickling a test's function import
these tests, never a top-level ``tests`` package that an installed distribution ships (ppi-python
does)."""
