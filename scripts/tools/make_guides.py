"""Generate the step guides from the rungs themselves, so a guide can never show a diff the code does not have.

For each step N -> N+1 it reads guides/src/step-N-M.md (the prose: an introduction, one explanation per hunk,
then how to run both scripts and the pitfalls), diffs scripts/N_*.py against scripts/M_*.py, and writes
    guides/step-N-M.md         the unified diff hunk by hunk, each hunk followed by its explanation
    guides/html/step-N-M.html  old rung left, new rung right, aligned, changes highlighted, explanations between
                               (styled by guides/html/style.css, which is written by hand)
An explanation starts with `<!-- hunk: TEXT -->`: it belongs to the one hunk whose changed lines contain TEXT.
A hunk without an explanation, an explanation without a hunk, or a step over its line budget is an error.

    python scripts/tools/make_guides.py           # write the guides (make guides)
    python scripts/tools/make_guides.py --check   # exit 1 if a guide is stale or incomplete (the tests run this)
"""

import argparse
import ast
import difflib
import html
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUIDES = ROOT / "guides"
SOURCES = GUIDES / "src"
CONTEXT = 3  # unchanged lines shown around each change, as `diff -u`
# Changed code lines (added + removed, blank lines and the module docstring aside, as `code_changes` counts them)
# a step may have: a step that needs more is teaching two concepts, or carrying what belongs in scripts/common/.
# Changed code lines per step, counted on ruff-formatted code. 2->3 and 5->6 each replace a whole layer: DDP's
# process group, sampler and rank-0 I/O arrive in 2->3, and in 5->6 accelerate's API takes the place of that
# plumbing and of AMP's, line for line (a swap counts twice: the line out and the line in). 5->6 measured 64
# on formatted code when its idioms (split batches, accumulate() around step and zero_grad, the timeout in
# its own lines) went in. Issue 32 made every collective a line of the rungs (the log line's and the epoch's loss,
# the stop agreement, rank 0's best model), each with an accelerate twin: 70 for both; 40 for the others.
BUDGET = {(1, 2): 40, (2, 3): 70, (3, 4): 40, (4, 5): 40, (5, 6): 70, (4, 7): 40}
HUNK_MARK = re.compile(r"^<!-- hunk: (.+?) -->\s*$", re.M)
AFTER_MARK = "<!-- after the diff -->"
STEPS_TABLE = "<!-- steps table -->"


class GuideError(Exception):
    pass


@dataclass
class Hunk:
    header: str
    lines: list  # (tag, text) with tag in " ", "-", "+"
    old_start: int
    new_start: int

    @property
    def changed(self):
        return [text for tag, text in self.lines if tag != " "]


def _rel(path):
    path = Path(path)
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def rung(n):
    (path,) = (ROOT / "scripts").glob(f"{n}_*.py")
    return path


def hunks(old, new):
    """The unified diff of two line lists, as Hunk objects (difflib's grouping, `diff -u`'s format)."""
    out = []
    for group in difflib.SequenceMatcher(None, old, new, autojunk=False).get_grouped_opcodes(
        CONTEXT
    ):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        lines = []
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                lines += [(" ", t) for t in old[a1:a2]]
                continue
            lines += [("-", t) for t in old[a1:a2]]
            lines += [("+", t) for t in new[b1:b2]]
        header = f"@@ -{i1 + 1},{i2 - i1} +{j1 + 1},{j2 - j1} @@"
        out.append(Hunk(header, lines, i1 + 1, j1 + 1))
    return out


def code_lines(path):
    """A script's lines after its module docstring: the code a step's budget counts."""
    text = Path(path).read_text()
    body = ast.parse(text).body
    doc = (
        body[0]
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
        else None
    )
    lines = text.splitlines()
    return lines[doc.end_lineno :] if doc else lines


def code_changes(old_path, new_path):
    """Changed code lines between two scripts: the non-blank lines a diff without context adds or removes,
    the module docstrings left out (the measure of issue 13, and of the before-stop check)."""
    diff = difflib.unified_diff(code_lines(old_path), code_lines(new_path), lineterm="", n=0)
    return sum(
        1
        for line in diff
        if line[:1] in "+-" and not line.startswith(("+++", "---")) and line[1:].strip()
    )


def parse_source(path):
    """(title, intro, [(key, explanation)], after) from a guide source file."""
    text = path.read_text()
    if AFTER_MARK not in text:
        raise GuideError(f"{_rel(path)}: no '{AFTER_MARK}' section (how to run both, pitfalls)")
    body, after = text.split(AFTER_MARK, 1)
    parts = HUNK_MARK.split(body)
    intro, rest = parts[0], parts[1:]
    explanations = [(rest[i].strip(), rest[i + 1].strip()) for i in range(0, len(rest), 2)]
    title = intro.strip().splitlines()[0].lstrip("# ").strip()
    return title, intro.strip(), explanations, after.strip()


def match(step, hunk_list, explanations, source):
    """Pair every hunk with exactly one explanation and every explanation with exactly one hunk."""
    paired, used = [], set()
    for number, hunk in enumerate(hunk_list, 1):
        found = [
            i
            for i, (key, _) in enumerate(explanations)
            if any(key in line for line in hunk.changed)
        ]
        if len(found) != 1:
            what = "no explanation" if not found else f"{len(found)} explanations"
            first = next((line for line in hunk.changed if line.strip()), "")
            raise GuideError(
                f"{source}: hunk {number} of step {step} ({hunk.header}) has {what}; its first "
                f"changed line: {first.strip()!r}. Add `<!-- hunk: TEXT -->` with TEXT from it"
            )
        if found[0] in used:
            raise GuideError(
                f"{source}: the explanation '{explanations[found[0]][0]}' matches two hunks"
            )
        used.add(found[0])
        paired.append((hunk, explanations[found[0]][1]))
    orphans = [key for i, (key, _) in enumerate(explanations) if i not in used]
    if orphans:
        raise GuideError(
            f"{source}: no hunk of step {step} contains {orphans[0]!r}: the scripts changed; "
            f"update or remove that explanation"
        )
    return paired


def step_markdown(step, title, intro, paired, after, counts):
    a, b = step
    old, new = rung(a).relative_to(ROOT), rung(b).relative_to(ROOT)
    out = [
        f"<!-- generated by `make guides` from guides/src/step-{a}-{b}.md and the two scripts: edit those -->",
        intro.replace(f"# {title}", f"# {title}", 1),
        "",
        f"The unified diff of `{old}` and `{new}` (3 lines of context): {counts[0]} lines added, "
        f"{counts[1]} removed, in {len(paired)} hunks; {counts[2]} changed code lines, the docstring aside (budget "
        f"{BUDGET[step]}). Side by side: "
        f"[html/step-{a}-{b}.html](html/step-{a}-{b}.html).",
        "",
    ]
    for number, (hunk, explanation) in enumerate(paired, 1):
        out += [f"### {number}. {hunk.header}", "", "```diff"]
        out += [f"{tag}{text}" for tag, text in hunk.lines]
        out += ["```", "", explanation, ""]
    out += [after, ""]
    return "\n".join(out)


def inline_html(text):
    text = html.escape(text, quote=False)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", text)
    return re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r'<a href="\2">\1</a>', text)


def prose_html(markdown):
    """Just enough Markdown for the explanations: paragraphs, `- ` lists, inline code, bold, links."""
    blocks, out = re.split(r"\n\s*\n", markdown.strip()), []
    for block in blocks:
        lines = block.splitlines()
        if block.startswith("```"):
            out.append(f"<pre>{html.escape(chr(10).join(lines[1:-1]))}</pre>")
        elif all(re.match(r"\s*- ", line) or line.startswith("  ") for line in lines):
            items = [re.sub(r"^\s*- ", "", item) for item in re.split(r"\n(?=\s*- )", block)]
            out.append(
                "<ul>" + "".join(f"<li>{inline_html(item)}</li>" for item in items) + "</ul>"
            )
        else:
            out.append(
                f"<p>{inline_html(' '.join(line.strip() for line in lines).lstrip('# '))}</p>"
            )
    return "\n".join(out)


def step_html(step, title, intro, paired, old_lines, new_lines):
    a, b = step
    old, new = rung(a).name, rung(b).name
    rows = []

    def row(n_old, t_old, n_new, t_new, cls_old="", cls_new=""):
        rows.append(
            f"<tr><td class='num'>{n_old}</td><td class='{cls_old}'>{html.escape(t_old)}</td>"
            f"<td class='num'>{n_new}</td><td class='{cls_new}'>{html.escape(t_new)}</td></tr>"
        )

    i = j = 0  # 0-based positions in old / new already shown
    for number, (hunk, explanation) in enumerate(paired, 1):
        start_old, start_new = hunk.old_start - 1, hunk.new_start - 1
        if start_old > i:
            rows.append(
                f"<tr class='skip'><td colspan='4'>{start_old - i} unchanged lines</td></tr>"
            )
        i, j = start_old, start_new
        rows.append(
            f"<tr class='why' id='hunk-{number}'><td colspan='4'><b>{number}.</b> "
            f"{prose_html(explanation)}</td></tr>"
        )
        lines = hunk.lines
        k = 0
        while k < len(lines):
            if lines[k][0] == " ":
                row(i + 1, old_lines[i], j + 1, new_lines[j])
                i, j, k = i + 1, j + 1, k + 1
                continue
            dels, adds = [], []
            while k < len(lines) and lines[k][0] == "-":
                dels.append(lines[k][1])
                k += 1
            while k < len(lines) and lines[k][0] == "+":
                adds.append(lines[k][1])
                k += 1
            for m in range(max(len(dels), len(adds))):  # side by side: removed left, added right
                left = (i + 1, dels[m], "del") if m < len(dels) else ("", "", "empty")
                right = (j + 1, adds[m], "add") if m < len(adds) else ("", "", "empty")
                row(left[0], left[1], right[0], right[1], left[2], right[2])
                i += m < len(dels)
                j += m < len(adds)
    if i < len(old_lines):
        rows.append(
            f"<tr class='skip'><td colspan='4'>{len(old_lines) - i} unchanged lines</td></tr>"
        )
    rows = [
        re.sub(r'href="(?!https?:|#|\.\./)', 'href="../', r) for r in rows
    ]  # the page lives in html/
    intro_html = re.sub(
        r'href="(?!https?:|#|\.\./)',
        'href="../',
        prose_html(intro.split(chr(10), 1)[1] if chr(10) in intro else ""),
    )
    return f"""<!DOCTYPE html>
<!-- generated by `make guides` from guides/src/step-{a}-{b}.md and the two scripts: edit those -->
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<link rel="stylesheet" href="style.css"></head>
<body>
<h1>{html.escape(title)}</h1>
<div class="intro">{intro_html}</div>
<p><a href="../step-{a}-{b}.md">The same step as a unified diff</a> &middot; <a href="../README.md">all guides</a></p>
<table class="diff">
<colgroup><col style="width:3.2em"><col><col style="width:3.2em"><col></colgroup>
<thead><tr><th colspan="2">scripts/{old}</th><th colspan="2">scripts/{new}</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody></table>
</body></html>
"""


def launch_command(n):
    """The first command under `Launch:` in rung n's docstring."""
    doc = rung(n).read_text().split('"""')[1]
    after = doc.split("Launch:", 1)[1].strip().splitlines()[0]
    return after.split("#")[0].strip()


def readme(titles, counts):
    """guides/README.md: guides/src/README.md with the steps table filled in from the scripts."""
    rows = [
        "| step | the concept | changed code lines (budget) | launch before | launch after |",
        "|---|---|---|---|---|",
    ]
    for (a, b), (_added, _removed, _, changed) in counts.items():
        concept = titles[(a, b)].split(":", 1)[1].strip()
        rows.append(
            f"| [{a} -> {b}](step-{a}-{b}.md) ([side by side](html/step-{a}-{b}.html)) | {concept} | "
            f"{changed} ({BUDGET[(a, b)]}) | `{launch_command(a)}` | `{launch_command(b)}` |"
        )
    source = (SOURCES / "README.md").read_text()
    if STEPS_TABLE not in source:
        raise GuideError(f"guides/src/README.md has no {STEPS_TABLE} line")
    return (
        "<!-- generated by `make guides` from guides/src/README.md and the scripts: edit those -->\n"
        + source.replace(STEPS_TABLE, "\n".join(rows))
    )


def build():
    """{path: text} of every generated file, and the changed-line counts per step."""
    files, counts, titles = {}, {}, {}
    for step in BUDGET:
        a, b = step
        source = SOURCES / f"step-{a}-{b}.md"
        if not source.exists():
            raise GuideError(f"{_rel(source)} is missing")
        old_lines = rung(a).read_text().splitlines()
        new_lines = rung(b).read_text().splitlines()
        hunk_list = hunks(old_lines, new_lines)
        added = sum(1 for h in hunk_list for tag, _ in h.lines if tag == "+")
        removed = sum(1 for h in hunk_list for tag, _ in h.lines if tag == "-")
        changed = code_changes(rung(a), rung(b))
        if changed > BUDGET[step]:
            raise GuideError(
                f"step {a}->{b} changes {changed} code lines, over its budget of {BUDGET[step]}: "
                f"move what is not about the step's concept into scripts/common/"
            )
        title, intro, explanations, after = parse_source(source)
        paired = match(f"{a}->{b}", hunk_list, explanations, _rel(source))
        counts[step] = (added, removed, len(hunk_list), changed)
        titles[step] = title
        files[GUIDES / f"step-{a}-{b}.md"] = step_markdown(
            step, title, intro, paired, after, (added, removed, changed)
        )
        files[GUIDES / "html" / f"step-{a}-{b}.html"] = step_html(
            step, title, intro, paired, old_lines, new_lines
        )
    files[GUIDES / "README.md"] = readme(titles, counts)
    for source in sorted(SOURCES.glob("*.md")):
        if source.name != "README.md" and not source.name.startswith("step-"):
            files[GUIDES / source.name] = with_diffs(source)
    return files, counts


DIFF_MARK = re.compile(r"^<!-- diff: (\S+) (\S+) -->$", re.M)


def with_diffs(source):
    """A guide whose `<!-- diff: A B -->` lines become the unified diff of the two files (paths from the repo's
    root), so a guide about code outside the ladder (guides/examples/) cannot drift from it either."""

    def diff(match):
        a, b = (ROOT / match.group(1)), (ROOT / match.group(2))
        for path in (a, b):
            if not path.is_file():
                raise GuideError(
                    f"{_rel(source)}: {match.group(0)} names {_rel(path)}, which does not exist"
                )
        lines = difflib.unified_diff(
            a.read_text().splitlines(),
            b.read_text().splitlines(),
            match.group(1),
            match.group(2),
            lineterm="",
            n=CONTEXT,
        )
        return "```diff\n" + "\n".join(lines) + "\n```"

    text = DIFF_MARK.sub(diff, source.read_text())
    header = f"<!-- generated by `make guides` from guides/src/{source.name} and the files it diffs: edit those -->"
    return header + "\n" + text


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="fail if a generated guide differs from the one on disk",
    )
    args = p.parse_args()
    try:
        files, counts = build()
    except GuideError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    stale = [path for path, text in files.items() if not path.exists() or path.read_text() != text]
    if args.check:
        if stale:
            names = ", ".join(str(_rel(p)) for p in stale)
            print(f"error: stale guides ({names}): run make guides", file=sys.stderr)
            sys.exit(1)
        return
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(files[path])
    for (a, b), (added, removed, n, changed) in counts.items():
        print(
            f"step {a}->{b}: {changed} changed code lines (budget {BUDGET[(a, b)]}); the diff: +{added} -{removed} "
            f"in {n} hunks"
        )
    print(f"{len(stale)} of {len(files)} files written")


if __name__ == "__main__":
    main()
