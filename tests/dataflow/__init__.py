"""Dataflow tier: prdist.dataflow on real distributed clusters and a real S3 server (SeaweedFS), without Prefect or the command line."""
