"""The two charts of `make bench`, drawn with matplotlib (a tools-and-tests dependency; the rungs never import
it): a line chart (loss curves) and a horizontal bar chart (throughput), 960 pixels wide."""

import matplotlib

matplotlib.use("Agg")  # files only: no display here, nor in CI
import matplotlib.pyplot as plt  # noqa: E402

DPI = 100
WIDTH = 9.6  # inches: 960 pixels at DPI
LINESTYLES = ["-", "--", ":", "-."]  # overlaid curves that coincide stay visible


def line_chart(path, series, title, xlabel, ylabel, log_y=False):
    """`series`: {label: [(x, y), ...]}. Writes a PNG to `path`."""
    fig, ax = plt.subplots(figsize=(WIDTH, 5.4), dpi=DPI)
    for i, (name, points) in enumerate(series.items()):
        xs, ys = zip(*points)
        ax.plot(xs, ys, LINESTYLES[i % len(LINESTYLES)], linewidth=2, label=name)
    if log_y:
        ax.set_yscale("log")
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.grid(True, which="major", color="#e5e5e5")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=9, frameon=False)
    # the legend sits in the right margin
    fig.subplots_adjust(left=0.08, right=0.70, top=0.91, bottom=0.11)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def bar_chart(path, bars, title, xlabel):
    """`bars`: [(label, value), ...], drawn top to bottom as horizontal bars with their values. Writes a PNG."""
    fig, ax = plt.subplots(figsize=(WIDTH, max(2.7, 1.1 + 0.34 * len(bars))), dpi=DPI)
    names, values = [n for n, _ in bars][::-1], [v for _, v in bars][::-1]
    drawn = ax.barh(names, values, color=[f"C{i}" for i in range(len(bars))][::-1])
    ax.bar_label(
        drawn,
        labels=[f"{v:,.0f}" if v >= 100 else f"{v:.3g}" for v in values],
        padding=4,
        fontsize=9,
    )
    ax.set(title=title, xlabel=xlabel)
    ax.set_xlim(0, max(values or [1]) * 1.15)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
