"""The names a user picks among for labels: aggregation rules and label-file formats.

Standard library only, so the command line can list them without importing pandas
(:mod:`prdist.verdicts.aggregation` and :mod:`prdist.dataflow.labels.formats` define what they do).
"""

#: Rules that make one verdict of a key's records: see :func:`prdist.verdicts.aggregation.aggregate`.
AGGREGATIONS = ("majority", "latest", "dawid-skene")

#: Formats of label files and annotation-tool exports ("auto": detected from the content).
LABEL_FORMATS = ("auto", "csv", "jsonl", "parquet", "label-studio", "mturk", "prodigy", "argilla")

#: Roles of a verdict's source in the label store: see :mod:`prdist.verdicts.roles`.
ROLES = ("annotator", "judge", "gold")
