"""Items by rank: sorted-order checks, extraction by rank, selection without a sort, ranked copies, exact counts, ingest of outside dumps."""
