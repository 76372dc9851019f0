"""Integration tier: the command line, Prefect flows on a real server and worker, Label Studio, deployment files, the docs and the README."""
