"""The HTML pieces of the pages: escaping, numbers as a reader reads them, tables and figures.

Every cell a table receives is trusted HTML: the callers escape what comes from the resource or
the user with :func:`esc` (or :func:`plain`, which also drops a URL's user info and query).
"""

from __future__ import annotations

import html
import math
import numbers
from collections.abc import Mapping

from prdist.redaction import display_url

__all__ = ["as_mapping", "esc", "figure", "html_table", "is_number", "number", "plain", "thousands"]


def as_mapping(value) -> Mapping:
    """``value`` when it is a mapping, else an empty one (a manifest field of the wrong kind shows nothing)."""
    return value if isinstance(value, Mapping) else {}


def esc(value) -> str:
    """``value`` as HTML text, quotes escaped too."""
    return html.escape(str(value), quote=True)


def is_number(value) -> bool:
    """Whether ``value`` is a real number (a bool is not)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def thousands(value) -> str:
    """``value`` as a whole number with thousands separators."""
    return f"{int(value):,}"


def number(value, digits: int = 3) -> str:
    """A float with ``digits`` decimals, an int with separators, a dash when missing."""
    if is_number(value) and float(value) == math.inf:
        return "\u221e"
    if value is None or (is_number(value) and not math.isfinite(float(value))):
        return "\u2014"
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return thousands(value)
    if is_number(value):
        return f"{float(value):.{digits}f}"
    return esc(value)


def plain(value, digits: int = 4) -> str | None:
    """A scalar from the manifest as escaped text, or None when it is not a scalar."""
    if value is None:
        return "\u2014"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if is_number(value):
        if isinstance(value, numbers.Integral):
            return thousands(value)
        x = float(value)
        return "\u2014" if not math.isfinite(x) else f"{x:.{digits}g}"
    if isinstance(value, str):
        return esc(display_url(value))
    if isinstance(value, (list, tuple)) and all(is_number(v) or isinstance(v, str) for v in value):
        shown = ", ".join(plain(v, digits) for v in value[:12])
        return shown + (", \u2026" if len(value) > 12 else "")
    return None


def html_table(headers, rows, *, numeric=(), css: str = "") -> str:
    """An HTML table; cells are trusted HTML (escape before calling)."""

    def cell(tag: str, i: int, content: str) -> str:
        return f'<{tag} class="num">{content}</{tag}>' if i in numeric else f"<{tag}>{content}</{tag}>"

    head = "".join(cell("th", i, h) for i, h in enumerate(headers))
    head = f"<thead><tr>{head}</tr></thead>" if any(headers) else ""
    body = "".join("<tr>" + "".join(cell("td", i, c) for i, c in enumerate(row)) + "</tr>" for row in rows)
    cls = f' class="{css}"' if css else ""
    return f"<table{cls}>{head}<tbody>{body}</tbody></table>"


def figure(svg: str, caption: str) -> str:
    """An SVG chart with its caption (trusted HTML)."""
    return f'<figure>{svg}<figcaption>{caption}</figcaption></figure>'
