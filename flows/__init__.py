"""Prefect flows of prdist: wiring only; every task calls one function of the prdist package."""
