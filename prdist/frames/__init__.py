"""The run's frames: Arrow tables and NumPy arrays, read and built without pandas
(:mod:`prdist.frames.columns`)."""
