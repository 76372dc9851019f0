"""The run's frames: Arrow tables and NumPy arrays, read and built without pandas
(:mod:`prdist.frames.columns`), and NumPy's unique, isin and median without ``numpy.ma``
(:mod:`prdist.frames.arrays`)."""
