"""The label store and what flows in and out of it: append-only verdict records, label files as tools export them, annotation tasks, items nobody can judge."""
