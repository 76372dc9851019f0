"""prdist: guaranteed bounds and confidence bands on the precision of massive ranked resources."""

__version__ = "0.1.0"
