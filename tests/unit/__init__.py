"""Unit tier: prdist's core (NumPy, SciPy, pandas) with no cluster, server, Prefect or command line."""
