"""Inline SVG charts for the HTML report, drawn by hand: no JavaScript, no CDN.

Each function returns one ``<svg class="chart">`` element that scales to its
container (``viewBox`` plus ``width: 100%``). Drawn data carry ``class="mark"`` so
a test can check that a chart drew something; a chart without data draws a framed
"not enough data" note (``class="empty"``) instead of failing, so a report over an
empty store still renders. Hover titles (``<title>``) give exact numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#999999")
"""Okabe-Ito colours: distinguishable with the common colour-vision deficiencies."""

FONT = 'font-family="system-ui, sans-serif"'


@dataclass(frozen=True)
class Point:
    """One value with its interval (all proportions in 0..1); ``note`` for the tooltip."""

    x: float
    y: float
    low: float
    high: float
    note: str = ""


@dataclass(frozen=True)
class Series:
    """A named line of points."""

    name: str
    points: Sequence[Point]
    dashed: bool = False
    """Drawn dark and dashed (the overall line, visible over a per-type line it equals)."""


@dataclass(frozen=True)
class Bar:
    """One bar: a label, a proportion with its interval, and a tooltip note."""

    label: str
    value: float
    low: float
    high: float
    note: str = ""


def _attr(text: str) -> str:
    return escape(text, quote=True)


def pct_label(value: float) -> str:
    """Axis label for a proportion: ``12%`` or ``0.5%`` for small steps."""
    v = 100 * value
    return f"{v:.0f}%" if abs(v - round(v)) < 1e-9 else f"{v:.1f}%"


def nice_max(value: float) -> float:
    """A round upper bound for a 0..1 axis at or above ``value`` (at least 1%)."""
    value = max(value, 0.01)
    if value >= 1:
        return 1.0
    exp = math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        bound = step * 10**exp
        if bound >= value - 1e-12:
            return min(1.0, bound)
    return 1.0


def _open(width: int, height: int, label: str) -> str:
    return (
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" '
        f'preserveAspectRatio="xMinYMin meet" role="img" aria-label="{_attr(label)}" '
        f'style="max-width:{width}px">'
        f"<title>{escape(label)}</title>"
    )


def empty_chart(label: str, message: str, width: int = 900, height: int = 140) -> str:
    """A framed note in place of a chart with no data."""
    return (
        _open(width, height, label)
        + f'<rect x="1" y="1" width="{width - 2}" height="{height - 2}" rx="8" fill="#fafafa" '
        'stroke="#bbb" stroke-dasharray="6 4"/>'
        + f'<text class="empty" x="{width / 2}" y="{height / 2}" text-anchor="middle" '
        f'dominant-baseline="middle" font-size="15" fill="#555" {FONT}>{escape(message)}</text>'
        "</svg>"
    )


def line_chart(
    label: str,
    series: Sequence[Series],
    x_label: str,
    x_max: float,
    width: int = 960,
    height: int = 360,
    empty: str = "not enough data",
) -> str:
    """Lines of proportions over x with shaded 95% bands and a legend."""
    series = [s for s in series if s.points]
    if not series:
        return empty_chart(label, empty, width)
    left, right, top, bottom = 56, 220, 16, 44
    pw, ph = width - left - right, height - top - bottom
    y_max = nice_max(max(p.high for s in series for p in s.points))
    x_max = max(x_max, 1.0)

    def sx(x: float) -> float:
        return left + pw * x / x_max

    def sy(y: float) -> float:
        return top + ph * (1 - min(y, y_max) / y_max)

    out = [_open(width, height, label), _y_axis(left, top, pw, ph, y_max)]
    for tick in _x_ticks(x_max):
        x = sx(tick)
        out.append(
            f'<line x1="{x:.1f}" y1="{top + ph}" x2="{x:.1f}" y2="{top + ph + 4}" stroke="#444"/>'
            f'<text x="{x:.1f}" y="{top + ph + 17}" text-anchor="middle" font-size="11" '
            f'fill="#444" {FONT}>{tick:g}</text>'
        )
    out.append(
        f'<text x="{left + pw / 2}" y="{height - 6}" text-anchor="middle" font-size="12" '
        f'fill="#333" {FONT}>{escape(x_label)}</text>'
    )
    for i, s in enumerate(series):
        colour = "#333333" if s.dashed else PALETTE[i % len(PALETTE)]
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        pts = sorted(s.points, key=lambda p: p.x)
        band = [f"{sx(p.x):.1f},{sy(p.high):.1f}" for p in pts] + [
            f"{sx(p.x):.1f},{sy(p.low):.1f}" for p in reversed(pts)
        ]
        out.append(
            f'<polygon class="band" points="{" ".join(band)}" fill="{colour}" '
            'fill-opacity="0.12" stroke="none"/>'
        )
        line = " ".join(f"{sx(p.x):.1f},{sy(p.y):.1f}" for p in pts)
        out.append(
            f'<polyline class="mark" points="{line}" fill="none" stroke="{colour}" '
            f'stroke-width="2" stroke-linejoin="round"{dash}/>'
        )
        for p in pts:
            out.append(
                f'<circle class="mark" cx="{sx(p.x):.1f}" cy="{sy(p.y):.1f}" r="2.8" '
                f'fill="{colour}"><title>{escape(s.name)}, {escape(p.note)}</title></circle>'
            )
        ly = top + 14 + 20 * i
        out.append(
            f'<line x1="{left + pw + 16}" y1="{ly - 7}" x2="{left + pw + 30}" y2="{ly - 7}" '
            f'stroke="{colour}" stroke-width="3"{dash}/>'
            f'<text x="{left + pw + 36}" y="{ly - 3}" font-size="12" fill="#222" {FONT}>'
            f"{escape(s.name)}</text>"
        )
    out.append("</svg>")
    return "".join(out)


def bar_chart(
    label: str,
    bars: Sequence[Bar],
    width: int = 900,
    empty: str = "not enough data",
    colours: Sequence[str] | None = None,
) -> str:
    """Horizontal bars of proportions with 95% whiskers and value labels."""
    if not bars:
        return empty_chart(label, empty, width)
    left, right, top, row = 200, 90, 24, 24
    height = top + row * len(bars) + 30
    pw = width - left - right
    x_max = nice_max(max(b.high for b in bars))

    def sx(v: float) -> float:
        return left + pw * min(v, x_max) / x_max

    out = [_open(width, height, label)]
    for tick in _ticks(x_max):
        x = sx(tick)
        out.append(
            f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{height - 26}" stroke="#e3e3e3"/>'
            f'<text x="{x:.1f}" y="{top - 10}" text-anchor="middle" font-size="11" fill="#555" '
            f"{FONT}>{pct_label(tick)}</text>"
        )
    for i, b in enumerate(bars):
        colour = colours[i % len(colours)] if colours else PALETTE[0]
        y = top + row * i
        w = max(sx(b.value) - left, 1.5)  # a 0% bar still shows a sliver
        name = b.label if len(b.label) <= 30 else b.label[:29] + "…"
        out.append(
            f'<text x="{left - 8}" y="{y + row / 2 + 4}" text-anchor="end" font-size="12" '
            f'fill="#222" {FONT}>{escape(name)}</text>'
            f'<rect class="mark" x="{left}" y="{y + 4}" width="{w:.1f}" height="{row - 8}" '
            f'fill="{colour}" rx="2"><title>{escape(b.label)}: {escape(b.note)}</title></rect>'
            f'<line class="whisker" x1="{sx(b.low):.1f}" y1="{y + row / 2}" x2="{sx(b.high):.1f}" '
            f'y2="{y + row / 2}" stroke="#222" stroke-width="1.2"/>'
            f'<text x="{sx(b.high) + 6:.1f}" y="{y + row / 2 + 4}" font-size="11" fill="#333" '
            f"{FONT}>{100 * b.value:.1f}%</text>"
        )
    out.append(
        f'<text x="{left + pw / 2}" y="{height - 8}" text-anchor="middle" font-size="12" '
        f'fill="#333" {FONT}>error rate (bars) with 95% interval (whiskers)</text></svg>'
    )
    return "".join(out)


def grouped_bar_chart(
    label: str,
    categories: Sequence[str],
    groups: Sequence[str],
    values: dict[tuple[str, str], Bar],
    width: int = 960,
    empty: str = "not enough data",
) -> str:
    """Vertical bars, one cluster per category, one bar per group that has data."""
    present = [c for c in categories if any((c, g) in values for g in groups)]
    if not present:
        return empty_chart(label, empty, width)
    left, right, top, bottom, height = 56, 200, 16, 80, 340
    pw, ph = width - left - right, height - top - bottom
    y_max = nice_max(max(b.high for b in values.values()))
    slot = pw / len(present)
    bar_w = max(4.0, min(28.0, (slot - 10) / len(groups)))

    def sy(v: float) -> float:
        return top + ph * (1 - min(v, y_max) / y_max)

    out = [_open(width, height, label), _y_axis(left, top, pw, ph, y_max)]
    for ci, cat in enumerate(present):
        cx = left + slot * ci + slot / 2
        start = cx - bar_w * len(groups) / 2
        for gi, grp in enumerate(groups):
            b = values.get((cat, grp))
            if b is None:
                continue
            x = start + bar_w * gi
            y = sy(b.value)
            h = max(top + ph - y, 1.5)
            mid = x + bar_w / 2
            out.append(
                f'<rect class="mark" x="{x + 1:.1f}" y="{top + ph - h:.1f}" '
                f'width="{bar_w - 2:.1f}" height="{h:.1f}" fill="{PALETTE[gi % len(PALETTE)]}">'
                f"<title>{escape(cat)}, {escape(grp)}: {escape(b.note)}</title></rect>"
                f'<line class="whisker" x1="{mid:.1f}" y1="{sy(b.low):.1f}" x2="{mid:.1f}" '
                f'y2="{sy(b.high):.1f}" stroke="#222" stroke-width="1.2"/>'
            )
        name = cat if len(cat) <= 18 else cat[:17] + "…"
        out.append(
            f'<text x="{cx:.1f}" y="{top + ph + 14}" text-anchor="end" font-size="11" fill="#222" '
            f'transform="rotate(-25 {cx:.1f} {top + ph + 14})" {FONT}>{escape(name)}</text>'
        )
    for gi, grp in enumerate(groups):
        ly = top + 14 + 20 * gi
        out.append(
            f'<rect x="{left + pw + 16}" y="{ly - 10}" width="12" height="12" '
            f'fill="{PALETTE[gi % len(PALETTE)]}"/>'
            f'<text x="{left + pw + 34}" y="{ly}" font-size="12" fill="#222" {FONT}>'
            f"{escape(grp)}</text>"
        )
    out.append("</svg>")
    return "".join(out)


def _ticks(y_max: float) -> list[float]:
    step = y_max / 4
    return [step * i for i in range(5)]


def _x_ticks(x_max: float) -> list[float]:
    step = max(1, math.ceil(x_max / 10))
    return [float(t) for t in range(0, int(x_max) + 1, step)]


def _y_axis(left: float, top: float, pw: float, ph: float, y_max: float) -> str:
    parts = []
    for tick in _ticks(y_max):
        y = top + ph * (1 - tick / y_max)
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + pw}" y2="{y:.1f}" stroke="#e3e3e3"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11" fill="#555" '
            f"{FONT}>{pct_label(tick)}</text>"
        )
    parts.append(
        f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#444"/>'
    )
    return "".join(parts)
