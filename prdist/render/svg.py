"""The drawing engine of the HTML pages: charts as inline SVG, drawn with NumPy (no plotting library,
no JavaScript), so a page needs nothing beside itself.

A :class:`Plot` is one chart: a plotting area with two axes (linear, log or one slot a category),
data layers clipped to it (bands, regions, lines, markers, shaded spans) and a legend whose labels
wrap. Every text it writes is HTML-escaped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from prdist.frames.arrays import distinct
from prdist.render.markup import esc

__all__ = ["Axis", "Plot", "log_subsample", "value_range", "wrap"]

# Colours (ColorBrewer Blues/Oranges, readable in print and for the common colour deficiencies).
BLUE, BLUE_FILL, RED, GREY_FILL = "#08519c", "#9ecae1", "#cb181d", "#ececec"
ORANGE_DARK, ORANGE, ORANGE_FILL = "#7f2704", "#fd8d3c", "#fdd0a2"


def _nice_step(span: float, target: int) -> float:
    raw = span / max(target, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    for mult in (1.0, 2.0, 2.5, 5.0, 10.0):
        if raw <= mult * power * (1 + 1e-9):
            return mult * power
    return 10.0 * power


def _decimals(step: float) -> int:
    """Decimals that print every multiple of a nice step exactly (0.25 needs two, 0.2 one)."""
    power = math.floor(math.log10(step) + 1e-9)
    mantissa = round(step / 10.0**power, 6)
    return max(0, -power + (1 if mantissa == 2.5 else 0))


def _count_label(value: float) -> str:
    """1, 20, 500, 1k, 20k, 1M, 1B: rank ticks a reader takes in at a glance."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


@dataclass(frozen=True)
class Axis:
    """One axis: data range, pixel range, linear, log or one slot a category, and its ticks."""

    lo: float
    hi: float
    start: float  # pixel of lo
    end: float  # pixel of hi
    log: bool = False
    names: tuple[str, ...] = ()  # a category axis: ticks at 1, 2, ... labeled with these names

    def pixels(self, values) -> np.ndarray:
        v = np.asarray(values, dtype=np.float64)
        if self.log:
            t = (np.log10(v) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        else:
            t = (v - self.lo) / (self.hi - self.lo)
        return self.start + t * (self.end - self.start)

    def ticks(self) -> tuple[list[tuple[float, str]], list[float]]:
        """Major ticks with labels, and unlabeled minor ticks."""
        if self.names:
            fits = max(3, int(abs(self.end - self.start) / len(self.names) / 6.5))  # characters a slot holds at 12 px
            return [(float(k), name if len(name) <= fits else name[: fits - 1] + "\u2026")
                    for k, name in enumerate(self.names, start=1)], []
        if not self.log:
            step = _nice_step(self.hi - self.lo, 6)
            first = math.ceil(self.lo / step - 1e-9)
            values = [k * step for k in range(first, int(math.floor(self.hi / step + 1e-9)) + 1)]
            return [(v, f"{v:.{_decimals(step)}f}") for v in values], []
        low_decade, high_decade = math.floor(math.log10(self.lo)), math.ceil(math.log10(self.hi))
        decades = [10.0**k for k in range(low_decade, high_decade + 1)]

        def inside(v: float) -> bool:
            return self.lo * (1 - 1e-9) <= v <= self.hi * (1 + 1e-9)

        # Few decades on the axis: label 2x and 5x too, so that there are enough labeled ticks.
        mults = (1, 2, 5) if math.log10(self.hi / self.lo) < 2.5 else (1,)
        major = sorted({d * m for d in decades for m in mults if inside(d * m)})
        minor = [d * m for d in decades for m in range(2, 10) if inside(d * m) and d * m not in major]
        return [(v, _count_label(v)) for v in major], minor


def _fmt_points(x: np.ndarray, y: np.ndarray) -> str:
    return " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(x, y))


def _finite_runs(*arrays: np.ndarray) -> list[np.ndarray]:
    """Index runs where every array is finite (a NaN breaks a line instead of faking a value)."""
    ok = np.logical_and.reduce([np.isfinite(a) for a in arrays])
    idx = np.flatnonzero(ok)
    if not idx.size:
        return []
    return np.split(idx, np.flatnonzero(np.diff(idx) != 1) + 1)


class Plot:
    """One chart: a plotting area with two axes, data layers clipped to it and a legend."""

    WIDTH, HEIGHT = 900, 400
    LEFT, RIGHT, TOP, BOTTOM = 64, 220, 18, 50

    def __init__(
        self,
        fig_id: str,
        *,
        x: tuple[float, float],
        y: tuple[float, float],
        xlog: bool = False,
        xnames: tuple[str, ...] = (),
        xlabel: str,
        ylabel: str,
        description: str,
    ):
        self.fig_id = fig_id
        x0, x1 = self.LEFT, self.WIDTH - self.RIGHT
        y0, y1 = self.HEIGHT - self.BOTTOM, self.TOP
        self.x = Axis(x[0], x[1], x0, x1, log=xlog, names=tuple(xnames))
        self.y = Axis(y[0], y[1], y0, y1)
        self.xlabel, self.ylabel, self.description = xlabel, ylabel, description
        self.background: list[str] = []  # drawn under the grid lines
        self.layers: list[str] = []
        self.legend: list[tuple[str, str, dict]] = []

    def band(self, xs, lower, upper, *, fill: str, opacity: float = 1.0, label: str | None = None) -> None:
        """Fill between two curves sharing x (NaN-separated pieces filled one by one)."""
        xs, lower, upper = (np.asarray(a, dtype=np.float64) for a in (xs, lower, upper))
        for run in _finite_runs(xs, lower, upper):
            px = self.x.pixels(xs[run])
            pts = _fmt_points(np.r_[px, px[::-1]], np.r_[self.y.pixels(upper[run]), self.y.pixels(lower[run])[::-1]])
            self.layers.append(f'<polygon points="{pts}" fill="{fill}" fill-opacity="{opacity}" stroke="none"/>')
        if label:
            self.legend.append(("fill", label, {"fill": fill, "opacity": opacity}))

    def region(self, upper_x, upper_y, lower_x, lower_y, *, fill: str, opacity: float) -> None:
        """Fill the polygon along one boundary and back along the other."""
        xs = np.r_[self.x.pixels(upper_x), self.x.pixels(lower_x)[::-1]]
        ys = np.r_[self.y.pixels(upper_y), self.y.pixels(lower_y)[::-1]]
        self.layers.append(f'<polygon points="{_fmt_points(xs, ys)}" fill="{fill}" fill-opacity="{opacity}" stroke="none"/>')

    def line(self, xs, ys, *, color: str, width: float = 1.6, dash: str | None = None, label: str | None = None) -> None:
        xs, ys = np.asarray(xs, dtype=np.float64), np.asarray(ys, dtype=np.float64)
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        for run in _finite_runs(xs, ys):
            pts = _fmt_points(self.x.pixels(xs[run]), self.y.pixels(ys[run]))
            self.layers.append(
                f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="{width}"'
                f' stroke-linejoin="round"{extra}/>'
            )
        if label:
            self.legend.append(("line", label, {"color": color, "width": width, "dash": dash}))

    def markers(self, xs, ys, *, color: str, label: str | None = None, radius: float = 2.4) -> None:
        px, py = self.x.pixels(xs), self.y.pixels(ys)
        circles = "".join(f'<circle cx="{a:.1f}" cy="{b:.1f}" r="{radius}"/>' for a, b in zip(px, py))
        self.layers.append(f'<g fill="#ffffff" stroke="{color}" stroke-width="1.1">{circles}</g>')
        if label:
            self.legend.append(("marker", label, {"color": color}))

    def vspan(self, x_lo: float, x_hi: float, *, fill: str, label: str) -> None:
        a, b = self.x.pixels([x_lo, x_hi])
        self.background.append(
            f'<rect x="{a:.1f}" y="{self.TOP}" width="{max(b - a, 0.5):.1f}" '
            f'height="{self.HEIGHT - self.BOTTOM - self.TOP}" fill="{fill}"/>'
        )
        self.legend.append(("fill", label, {"fill": fill, "opacity": 1.0}))

    def _axes(self) -> str:
        out = []
        (px0, px1), (py0, py1) = (self.x.start, self.x.end), (self.y.start, self.y.end)
        major, minor = self.x.ticks()
        for v, text in major:
            p = float(self.x.pixels(v))
            out.append(f'<line x1="{p:.1f}" y1="{py1}" x2="{p:.1f}" y2="{py0}" stroke="#e3e3e3"/>')
            out.append(f'<line x1="{p:.1f}" y1="{py0}" x2="{p:.1f}" y2="{py0 + 5}" stroke="#444"/>')
            out.append(f'<text x="{p:.1f}" y="{py0 + 18}" text-anchor="middle">{esc(text)}</text>')
        for v in minor:
            p = float(self.x.pixels(v))
            out.append(f'<line x1="{p:.1f}" y1="{py0}" x2="{p:.1f}" y2="{py0 + 3}" stroke="#777"/>')
        for v, text in self.y.ticks()[0]:
            p = float(self.y.pixels(v))
            out.append(f'<line x1="{px0}" y1="{p:.1f}" x2="{px1}" y2="{p:.1f}" stroke="#e3e3e3"/>')
            out.append(f'<line x1="{px0 - 5}" y1="{p:.1f}" x2="{px0}" y2="{p:.1f}" stroke="#444"/>')
            out.append(f'<text x="{px0 - 8}" y="{p + 4:.1f}" text-anchor="end">{esc(text)}</text>')
        out.append(f'<rect x="{px0}" y="{py1}" width="{px1 - px0}" height="{py0 - py1}" fill="none" stroke="#444"/>')
        out.append(
            f'<text x="{(px0 + px1) / 2:.1f}" y="{self.HEIGHT - 10}" text-anchor="middle" '
            f'font-size="13">{esc(self.xlabel)}</text>'
        )
        out.append(
            f'<text transform="translate(16 {(py0 + py1) / 2:.1f}) rotate(-90)" text-anchor="middle" '
            f'font-size="13">{esc(self.ylabel)}</text>'
        )
        return "".join(out)

    def _legend(self) -> str:
        x0, y = self.WIDTH - self.RIGHT + 18, self.TOP + 10
        out = []
        for kind, label, style in self.legend:
            if kind == "fill":
                out.append(
                    f'<rect x="{x0}" y="{y - 6}" width="22" height="12" fill="{style["fill"]}" '
                    f'fill-opacity="{style["opacity"]}" stroke="#999" stroke-width="0.5"/>'
                )
            elif kind == "line":
                dash = f' stroke-dasharray="{style["dash"]}"' if style["dash"] else ""
                out.append(
                    f'<line x1="{x0}" y1="{y}" x2="{x0 + 22}" y2="{y}" stroke="{style["color"]}" '
                    f'stroke-width="{style["width"]}"{dash}/>'
                )
            else:
                out.append(
                    f'<circle cx="{x0 + 11}" cy="{y}" r="3" fill="#ffffff" stroke="{style["color"]}" stroke-width="1.1"/>'
                )
            lines = wrap(label, int((self.RIGHT - 48) / 6.2))  # ~6.2 units a character at 12 px
            spans = "".join(f'<tspan x="{x0 + 30}" dy="{0 if i == 0 else 14}">{esc(line)}</tspan>' for i, line in enumerate(lines))
            out.append(f'<text x="{x0 + 30}" y="{y + 4}">{spans}</text>')
            y += 22 + 14 * (len(lines) - 1)
        return "".join(out)

    def svg(self) -> str:
        clip = f"{self.fig_id}-clip"
        (px0, px1), (py0, py1) = (self.x.start, self.x.end), (self.y.start, self.y.end)
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" id="{self.fig_id}" viewBox="0 0 {self.WIDTH} {self.HEIGHT}" '
            f'width="100%" role="img" aria-labelledby="{self.fig_id}-title" font-family="system-ui, sans-serif" '
            f'font-size="12" fill="#222">'
            f'<title id="{self.fig_id}-title">{esc(self.description)}</title>'
            f'<defs><clipPath id="{clip}"><rect x="{px0}" y="{py1}" width="{px1 - px0}" '
            f'height="{py0 - py1}"/></clipPath></defs>'
            f'<rect width="{self.WIDTH}" height="{self.HEIGHT}" fill="#ffffff"/>'
            f'<g clip-path="url(#{clip})">{"".join(self.background)}</g>{self._axes()}'
            f'<g clip-path="url(#{clip})">{"".join(self.layers)}</g>{self._legend()}</svg>'
        )


def value_range(*arrays: np.ndarray, low: float = 0.0, high: float = 1.0) -> tuple[float, float]:
    """A y range that shows the data with a little room, snapped to tenths inside [low, high]."""
    values = np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in arrays])
    values = values[np.isfinite(values)]
    if not values.size:
        return low, high
    lo = max(low, math.floor(values.min() * 10 - 0.25) / 10)
    hi = min(high, math.ceil(values.max() * 10 + 0.25) / 10)
    if hi - lo < 0.1:
        lo, hi = max(low, hi - 0.1), max(hi, lo + 0.1)
    return lo, hi


def log_subsample(ranks: np.ndarray, max_points: int) -> np.ndarray:
    """Indices of a log-spaced subset of sorted ranks, first and last always kept."""
    if ranks.size <= max_points:
        return np.arange(ranks.size)
    targets = np.geomspace(ranks[0], ranks[-1], max_points)
    idx = np.clip(np.searchsorted(ranks, targets), 0, ranks.size - 1)
    return distinct(np.r_[0, idx, ranks.size - 1])


def wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken at spaces (a longer word stays whole).

    >>> wrap("worst case over every verdict", 20)
    ['worst case over', 'every verdict']
    """
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]
