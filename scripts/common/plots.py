"""Two small chart types for `make bench`, drawn with Pillow (already needed for image datasets), so that the
benchmark needs no plotting library: a line chart (loss curves) and a horizontal bar chart (throughput)."""
import math

from PIL import Image, ImageDraw, ImageFont

WIDTH, HEIGHT = 960, 540
MARGIN = dict(left=90, right=270, top=50, bottom=60)  # the legend sits in the right margin
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf"]
DASHES = [None, (10, 6), (3, 4), (14, 4, 3, 4)]  # overlaid curves that coincide stay visible


def _font(size):
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow without FreeType: the fixed bitmap font
        return ImageFont.load_default()


def _ticks(low, high, count=5):
    """Round tick values (1, 2, 2.5 or 5 times a power of ten apart) covering [low, high]."""
    if high <= low:
        high = low + 1.0
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(nice * magnitude for nice in (1, 2, 2.5, 5, 10) if nice * magnitude >= raw)
    start = math.floor(low / step) * step
    return [start + i * step for i in range(int((high - start) / step) + 2)]


def _label(value):
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _dashed(draw, points, colour, dash, width=3):
    if dash is None:
        draw.line(points, fill=colour, width=width, joint="curve")
        return
    pattern, i, left = list(dash), 0, dash[0]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        length = ((x1 - x0) ** 2 + (y1 - y0) ** 2) ** 0.5 or 1.0
        done = 0.0
        while done < length:
            run = min(left, length - done)
            a, b = done / length, (done + run) / length
            if i % 2 == 0:
                draw.line([(x0 + (x1 - x0) * a, y0 + (y1 - y0) * a), (x0 + (x1 - x0) * b, y0 + (y1 - y0) * b)],
                          fill=colour, width=width)
            done, left = done + run, left - run
            if left <= 0:
                i, left = i + 1, pattern[(i + 1) % len(pattern)]


def line_chart(path, series, title, xlabel, ylabel, log_y=False):
    """`series`: {label: [(x, y), ...]}. Writes a PNG to `path`."""
    image = Image.new("RGB", (WIDTH, HEIGHT), "white")
    draw = ImageDraw.Draw(image)
    small, big = _font(14), _font(18)
    ys = [y for points in series.values() for _, y in points]
    xs = [x for points in series.values() for x, _ in points]
    f = (lambda v: math.log10(v)) if log_y else (lambda v: v)
    y_low, y_high = min(f(y) for y in ys), max(f(y) for y in ys)
    y_low, y_high = (math.floor(y_low), math.ceil(y_high)) if log_y else (min(0.0, y_low), y_high)
    x_low, x_high = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    left, top = MARGIN["left"], MARGIN["top"]
    right, bottom = WIDTH - MARGIN["right"], HEIGHT - MARGIN["bottom"]

    def at(x, y):
        fy = f(y)
        return (left + (x - x_low) / (x_high - x_low) * (right - left),
                bottom - (fy - y_low) / ((y_high - y_low) or 1) * (bottom - top))

    y_ticks = range(int(y_low), int(y_high) + 1) if log_y else [t for t in _ticks(y_low, y_high) if t <= y_high]
    for t in y_ticks:
        y = bottom - (t - y_low) / ((y_high - y_low) or 1) * (bottom - top)
        draw.line([(left, y), (right, y)], fill="#e5e5e5")
        draw.text((left - 8, y), f"1e{t}" if log_y else _label(t), fill="black", font=small, anchor="rm")
    for t in [t for t in _ticks(x_low, x_high) if x_low <= t <= x_high]:
        x = left + (t - x_low) / (x_high - x_low) * (right - left)
        draw.line([(x, top), (x, bottom)], fill="#f0f0f0")
        draw.text((x, bottom + 8), _label(t), fill="black", font=small, anchor="mt")
    draw.rectangle([left, top, right, bottom], outline="black")
    for i, (name, points) in enumerate(series.items()):
        colour, dash = COLOURS[i % len(COLOURS)], DASHES[i % len(DASHES)]
        _dashed(draw, [at(x, y) for x, y in points], colour, dash)
        y = top + 10 + 24 * i
        _dashed(draw, [(right + 15, y), (right + 55, y)], colour, dash)
        draw.text((right + 62, y), name, fill="black", font=small, anchor="lm")
    draw.text((WIDTH / 2, 16), title, fill="black", font=big, anchor="mm")
    draw.text(((left + right) / 2, HEIGHT - 18), xlabel, fill="black", font=small, anchor="mm")
    draw.text((left, top - 4), ylabel, fill="black", font=small, anchor="lb")
    image.save(path)


def bar_chart(path, bars, title, xlabel):
    """`bars`: [(label, value), ...], drawn top to bottom as horizontal bars with their values. Writes a PNG."""
    height = max(HEIGHT // 2, MARGIN["top"] + MARGIN["bottom"] + 34 * len(bars))
    image = Image.new("RGB", (WIDTH, height), "white")
    draw = ImageDraw.Draw(image)
    small, big = _font(14), _font(18)
    left, right, top = 300, WIDTH - 120, MARGIN["top"]
    high = max(value for _, value in bars) or 1.0
    for i, (name, value) in enumerate(bars):
        y = top + 34 * i
        x = left + value / high * (right - left)
        draw.rectangle([left, y + 4, x, y + 28], fill=COLOURS[i % len(COLOURS)])
        draw.text((left - 10, y + 16), name, fill="black", font=small, anchor="rm")
        draw.text((x + 8, y + 16), _label(value), fill="black", font=small, anchor="lm")
    draw.line([(left, top), (left, top + 34 * len(bars))], fill="black")
    draw.text((WIDTH / 2, 16), title, fill="black", font=big, anchor="mm")
    draw.text(((left + right) / 2, height - 20), xlabel, fill="black", font=small, anchor="mm")
    image.save(path)
