"""Where and how work runs: the one executor seam over Dask, the cluster it runs on, progress lines."""
