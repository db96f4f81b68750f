"""doctor's findings in the formats linters print (`--output-format`), its `--statistics`, and the
`[tool.ddp-doctor]` section of the checked project's pyproject.toml.

    text    path:line:col: CODE message (guide), as flake8 and ruff
    json    a list of objects: path, line, column, code, message, fix, guide, fixable
    github  GitHub Actions workflow commands (::error ...), which annotate the pull request's diff
    sarif   SARIF 2.1.0, for code scanning (GitHub's upload-sarif, GitLab, ...)
"""

import json
import tomllib
from collections import Counter
from pathlib import Path

FORMATS = ("text", "json", "github", "sarif")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
CONFIG_KEYS = {"select", "ignore", "preview"}


class ConfigError(ValueError):
    """A [tool.ddp-doctor] section doctor cannot use: one `error:` line, exit 2."""


def render(findings, rules, guide, output_format, version):
    """The findings, printed whole in `output_format` ('' when there is nothing to print)."""
    if output_format == "text":
        return "".join(f"{f}\n" for f in findings)
    if output_format == "github":
        return "".join(
            f"::error title=ddp-doctor ({f.code}),file={f.path},line={f.line},col={f.col + 1}::"
            f"{escape(str(f))}\n"
            for f in findings
        )
    if output_format == "json":
        rows = [
            {
                "path": f.path,
                "line": f.line,
                "column": f.col + 1,
                "code": f.code,
                "message": rules[f.code][0] + reached(f),
                "via": f.via or None,
                "fix": rules[f.code][1],
                "guide": f"{guide}#{rules[f.code][2]}",
                "fixable": f.fixable,
            }
            for f in findings
        ]
        return json.dumps(rows, indent=2) + "\n"
    return json.dumps(sarif(findings, rules, guide, version), indent=2) + "\n"


def reached(finding):
    """Where the mistake is when a call at the finding's line reaches it in another module."""
    return f" (in {finding.via}, which this call runs)" if finding.via else ""


def escape(text):
    """A GitHub workflow command's message: %, CR and LF are escaped, as the runner reads them."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def sarif(findings, rules, guide, version):
    """One run of one tool: every rule in tool.driver.rules, one result per finding."""
    codes = sorted(rules)
    return {
        "version": "2.1.0",
        "$schema": SARIF_SCHEMA,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "ddp-doctor",
                        "version": version,
                        "rules": [
                            {
                                "id": code,
                                "shortDescription": {"text": rules[code][0]},
                                "fullDescription": {"text": rules[code][3]},
                                "help": {"text": f"{rules[code][1]} ({guide}#{rules[code][2]})"},
                                "defaultConfiguration": {"level": "error"},
                            }
                            for code in codes
                        ],
                    }
                },
                "results": [
                    {
                        "ruleId": f.code,
                        "ruleIndex": codes.index(f.code),
                        "level": "error",
                        "message": {"text": f"{rules[f.code][0]}{reached(f)}: {rules[f.code][1]}"},
                        "locations": [
                            {
                                "physicalLocation": {
                                    "artifactLocation": {"uri": uri(f.path)},
                                    "region": {"startLine": f.line, "startColumn": f.col + 1},
                                }
                            }
                        ],
                    }
                    for f in findings
                ],
            }
        ],
    }


def uri(path):
    """A relative path stays relative (code scanning resolves it against the checkout); an absolute one is a
    file:// URI."""
    p = Path(path)
    return p.as_uri() if p.is_absolute() else p.as_posix()


def statistics(findings, rules):
    """One line a code, most frequent first, as `ruff --statistics`: count, code, [*] when --fix can rewrite
    some of them, the rule."""
    counts = Counter(f.code for f in findings)
    fixable = {f.code for f in findings if f.fixable}
    width = len(str(max(counts.values(), default=0)))
    return "".join(
        f"{n:>{width}}\t{code}\t{'[*]' if code in fixable else '   '} {rules[code][0]}\n"
        for code, n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    )


def selected(code, select, ignore, preview=frozenset()):
    """Whether a code is reported: matched by a select prefix (every code when there is none) and not by an
    ignore prefix at least as long; as in ruff, the more specific prefix wins (`select DDL107, ignore DDL1`). A
    code in `preview` (the preview rules, when preview is off) is reported only when select names it exactly."""
    if code in preview and code not in select:
        return False

    def longest(prefixes):
        return max((len(p) for p in prefixes if code.startswith(p)), default=-1)

    chosen = longest(select) if select else 0
    return chosen >= 0 and longest(ignore) < chosen


def parse_prefixes(text, codes, where):
    """'DDL1,ddl107' -> ['DDL1', 'DDL107']; a prefix that names no code is an error."""
    items = text if isinstance(text, list) else str(text).split(",")
    prefixes = [str(p).strip().upper() for p in items if str(p).strip()]
    for prefix in prefixes:
        if not any(code.startswith(prefix) for code in codes):
            raise ConfigError(f"{where}: {prefix!r} matches no code: --explain lists them")
    return prefixes


CACHE = {}  # folder -> its [tool.ddp-doctor] section and pyproject.toml


def project_config(start, codes):
    """The [tool.ddp-doctor] section of the nearest pyproject.toml above `start` that has one, as
    {'select': [...], 'ignore': [...], 'preview': bool}, with the file it came from; ({}, None) when there is none."""
    folder = Path(start).resolve()
    folder = folder if folder.is_dir() else folder.parent
    for candidate in [folder, *folder.parents]:
        if candidate in CACHE:
            return CACHE[candidate]
        pyproject = candidate / "pyproject.toml"
        if not pyproject.is_file():
            continue
        try:
            with open(pyproject, "rb") as f:
                section = tomllib.load(f).get("tool", {}).get("ddp-doctor")
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise ConfigError(f"{pyproject}: cannot read it ({e}): fix the TOML") from e
        if section is None:
            continue
        where = f"{pyproject} [tool.ddp-doctor]"
        if not isinstance(section, dict) or set(section) - CONFIG_KEYS:
            unknown = sorted(set(section) - CONFIG_KEYS) if isinstance(section, dict) else section
            raise ConfigError(
                f"{where}: unknown key(s) {unknown}: it takes select, ignore and preview"
            )
        found = {
            key: parse_prefixes(section[key], codes, f"{where} {key}")
            for key in ("select", "ignore")
            if key in section
        }
        if "preview" in section:
            if not isinstance(section["preview"], bool):
                raise ConfigError(f"{where} preview: {section['preview']!r}: it is true or false")
            found["preview"] = section["preview"]
        CACHE[candidate] = (found, pyproject)
        return CACHE[candidate]
    return {}, None
