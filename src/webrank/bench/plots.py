"""Plots for the benchmark reports (matplotlib, Agg backend, imported lazily).

Suites draw through :meth:`webrank.bench.runner.BenchContext.plot`, handing a function
that fills a figure; the helpers here draw the common shapes (lines over a size or a
step count, grouped bars) so every report looks alike. PNGs are written at 100 dpi to
keep committed results small.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["available", "bars", "lines", "save"]

DPI = 100


def available() -> bool:
    """Whether matplotlib can be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def save(path: Path, draw: Callable[[Any], None], *, size=(6.4, 4.0)) -> None:
    """Create a figure of ``size`` inches, let ``draw(fig)`` fill it, save it as PNG."""
    import matplotlib

    matplotlib.use("Agg")  # no display; must precede pyplot's first import
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=size)
    try:
        draw(fig)
        fig.tight_layout()
        fig.savefig(path, dpi=DPI)
    finally:
        plt.close(fig)


def lines(ax: Any, series: Mapping[str, tuple[Sequence[float], Sequence[float]]], *,
          xlabel: str, ylabel: str, title: str = "", logx: bool = False,
          logy: bool = False, markers: bool = True) -> None:
    """One line per ``label: (x, y)`` on ``ax``, with a legend."""
    for label, (x, y) in series.items():
        if len(x):
            ax.plot(x, y, marker="o" if markers else None, markersize=3, label=label)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    if series:
        ax.legend(fontsize=7)


def bars(ax: Any, groups: Sequence[str], series: Mapping[str, Sequence[float]], *,
         ylabel: str, title: str = "", logy: bool = False) -> None:
    """Grouped bars: one group per entry of ``groups``, one bar per series in each.

    A value of 0 or below (not measured) leaves its bar out.
    """
    import numpy as np

    k = max(len(series), 1)
    width = 0.8 / k
    x = np.arange(len(groups))
    for i, (label, values) in enumerate(series.items()):
        vals = np.asarray(values, dtype=float)
        shown = vals > 0
        ax.bar(x[shown] + (i - (k - 1) / 2) * width, vals[shown], width, label=label)
    ax.set_xticks(x, groups, fontsize=8)
    if logy:
        ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=7)
