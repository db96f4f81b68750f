"""doctor's interfaces, as linters have them (issue 33, item 3): exact `# noqa` codes, --select/--ignore with
prefixes, a [tool.ddp-doctor] section in the checked project's pyproject.toml, --output-format
text|json|github|sarif, --statistics, --version, and exit codes 0 clean / 1 findings / 2 bad input with one
`error:` line."""

import json

import doctor
import pytest

# DDL113 (line 3), DDL109 (line 4), DDL102 (line 5, fixable)
THREE = (
    "import torch\nimport torch.distributed as dist\ndist.init_process_group()\n"
    "torch.load('w.pt', weights_only=False)\nscaler = torch.cuda.amp.GradScaler()\n"
)


def run(capsys, *argv):
    """(exit code, stdout, stderr) of `ddp-doctor ARGV`, argparse's own exits included."""
    try:
        code = doctor.main([str(a) for a in argv])
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def reported(capsys, *argv):
    code, out, err = run(capsys, *argv)
    assert err == "", err
    return code, [line.split()[1] for line in out.splitlines()]


@pytest.fixture
def three(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(THREE)
    return path


@pytest.mark.parametrize(
    "comment, silenced",
    [
        ("# noqa: DDL1090", False),  # matched as a substring before: DDL109 is in DDL1090
        ("# noqa: DDL10", False),
        ("# noqa: DDL109", True),
        ("# noqa:DDL108,DDL109", True),
        ("# noqa: E501 ddl109", True),
        ("# noqa", True),
    ],
)
def test_noqa_codes_are_matched_exactly(comment, silenced):
    source = THREE.replace("False)\n", f"False)  {comment}\n")
    codes = [f.code for f in doctor.check_source(source)]
    assert ("DDL109" not in codes) == silenced, (comment, codes)
    assert "DDL102" in codes and "DDL113" in codes  # a comment on line 4 silences nothing else


@pytest.mark.parametrize(
    "argv, expected",
    [
        ([], ["DDL113", "DDL109", "DDL102"]),
        (["--select", "DDL10"], ["DDL109", "DDL102"]),
        (["--select", "ddl113,DDL102"], ["DDL113", "DDL102"]),
        (["--ignore", "DDL11"], ["DDL109", "DDL102"]),
        (["--select", "DDL1", "--ignore", "DDL109"], ["DDL113", "DDL102"]),
        (["--select", "DDL109", "--ignore", "DDL1"], ["DDL109"]),  # the more specific prefix wins
    ],
)
def test_select_and_ignore_take_codes_and_prefixes(capsys, three, argv, expected):
    assert reported(capsys, three, *argv) == (1, expected)


def test_ignoring_every_finding_exits_0(capsys, three):
    assert run(capsys, three, "--ignore", "DDL") == (0, "", "")


def test_the_checked_projects_pyproject_section_selects_and_the_command_line_overrides(
    capsys, tmp_path
):
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.ddp-doctor]\nignore = ["DDL113", "ddl102"]\n'
    )
    train = project / "src" / "train.py"
    train.write_text(THREE)
    assert reported(capsys, train) == (1, ["DDL109"])
    assert reported(capsys, train, "--ignore", "DDL109") == (1, ["DDL113", "DDL102"])
    elsewhere = tmp_path / "train.py"  # outside the project: its section does not apply
    elsewhere.write_text(THREE)
    assert reported(capsys, elsewhere) == (1, ["DDL113", "DDL109", "DDL102"])


@pytest.mark.parametrize(
    "section, message",
    [
        ('select = ["DDL9"]', "'DDL9' matches no code"),
        ('exclude = ["x"]', "unknown key(s) ['exclude']"),
        ("ignore = [", "cannot read it"),
    ],
)
def test_a_bad_pyproject_section_is_one_error_line_and_exit_2(capsys, tmp_path, section, message):
    (tmp_path / "pyproject.toml").write_text(f"[tool.ddp-doctor]\n{section}\n")
    (tmp_path / "train.py").write_text(THREE)
    code, out, err = run(capsys, tmp_path / "train.py")
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("error: "), err
    assert message in err and "pyproject.toml" in err


def test_json_output_has_one_object_per_finding(capsys, three):
    code, out, err = run(capsys, three, "--output-format", "json")
    rows = json.loads(out)
    assert code == 1 and err == ""
    assert [(r["line"], r["column"], r["code"]) for r in rows] == [
        (3, 1, "DDL113"),
        (4, 1, "DDL109"),
        (5, 10, "DDL102"),
    ]
    assert all(r["path"] == str(three) for r in rows)
    assert [r["fixable"] for r in rows] == [False, False, True]
    assert rows[1]["message"] == doctor.RULES["DDL109"][0]
    assert rows[1]["guide"] == "guides/your-script.md#12-load-safely"
    assert run(capsys, three, "--output-format", "json", "--ignore", "DDL")[:2] == (0, "[]\n")


def test_github_output_is_one_workflow_command_per_finding(capsys, three):
    code, out, _ = run(capsys, three, "--output-format", "github")
    lines = out.splitlines()
    assert code == 1 and len(lines) == 3
    assert lines[1].startswith(
        f"::error title=ddp-doctor (DDL109),file={three},line=4,col=1::{three}:4:1: DDL109 torch.load"
    )
    three.write_text(
        THREE.replace("torch.load('w.pt', weights_only=False)", "torch.save(net, 'w.pt')")
    )
    out = run(capsys, three, "--output-format", "github", "--preview", "--select", "DDL107")[1]
    (line,) = out.splitlines()  # DDL107, a preview rule
    assert "`rank %25 ngpus_per_node" in line  # % is escaped: the runner reads %XX as an escape


def test_sarif_output_has_the_fields_sarif_2_1_0_requires(capsys, three, tmp_path, monkeypatch):
    """No SARIF schema file can be had offline: the fields the 2.1.0 schema requires, and those code scanning
    reads, are checked one by one."""
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "train.py", "--output-format", "sarif")
    log = json.loads(out)
    assert code == 1 and err == ""
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    (only,) = log["runs"]
    driver = only["tool"]["driver"]
    assert driver["name"] == "ddp-doctor" and driver["version"] == doctor.__version__
    rules = driver["rules"]
    assert [r["id"] for r in rules] == sorted(doctor.RULES)
    assert all(r["shortDescription"]["text"] and r["fullDescription"]["text"] for r in rules)
    results = only["results"]
    assert [r["ruleId"] for r in results] == ["DDL113", "DDL109", "DDL102"]
    for result in results:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["message"]["text"].startswith(doctor.RULES[result["ruleId"]][0])
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert (
            physical["artifactLocation"]["uri"] == "train.py"
        )  # relative: resolved by the checkout
        assert physical["region"]["startLine"] >= 3 and physical["region"]["startColumn"] >= 1
    absolute = run(capsys, three, "--output-format", "sarif")[1]
    uri = json.loads(absolute)["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert uri["artifactLocation"]["uri"] == three.as_uri()


def test_statistics_count_each_code_and_mark_the_fixable(capsys, three, tmp_path):
    other = tmp_path / "other.py"
    other.write_text(THREE.replace("scaler =", "torch.load('n.pt', weights_only=False)\nscaler ="))
    code, out, err = run(capsys, three, other, "--statistics")
    assert code == 1 and err == ""
    assert out.splitlines() == [
        f"3\tDDL109\t    {doctor.RULES['DDL109'][0]}",
        f"2\tDDL102\t[*] {doctor.RULES['DDL102'][0]}",
        f"2\tDDL113\t    {doctor.RULES['DDL113'][0]}",
    ]


def test_version(capsys):
    code, out, err = run(capsys, "--version")
    assert code == 0 and out == f"ddp-doctor {doctor.__version__}\n"
    assert doctor.__version__.count(".") == 2


def test_exit_codes_0_clean_1_findings(capsys, tmp_path, three):
    clean = tmp_path / "clean.py"
    clean.write_text("import torch\nprint(torch.ones(2))\n")
    assert run(capsys, clean) == (0, "", "")
    assert run(capsys, three)[0] == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["--output-format", "xml", "train.py"],
        ["--select", "DDL9", "train.py"],
        ["--ignore", "XYZ", "train.py"],
        ["--no-such-option", "train.py"],
        ["missing.py"],
        [],
    ],
)
def test_bad_input_is_one_error_line_and_exit_2(capsys, tmp_path, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(THREE)
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "", (argv, out)
    assert err.startswith("error: ") and err.count("\n") == 1, (argv, err)


def test_fix_rewrites_only_the_selected_codes(capsys, tmp_path):
    """As ruff: --fix with --ignore (or a noqa) leaves that code's lines alone."""
    source = (
        "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\n"
        "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, shuffle=True, sampler=sampler)\n"
        "sampler.set_epoch(0)\nscaler = torch.cuda.amp.GradScaler()\n"
    )
    train = tmp_path / "train.py"
    train.write_text(source)
    code, out, err = run(capsys, "--fix", "--ignore", "DDL104", train)
    assert code == 0 and err == f"fixed: {train}: 6 DDL102\n", err
    assert train.read_text() == source.replace(
        "torch.cuda.amp.GradScaler()", 'torch.amp.GradScaler("cuda")'
    )


@pytest.mark.parametrize(
    "argv, section, expected",
    [
        ([], None, ["DDL113", "DDL102"]),  # DDL107 is a preview rule: not run by default
        (["--preview"], None, ["DDL113", "DDL107", "DDL102"]),
        (["--select", "DDL107"], None, ["DDL107"]),  # named exactly: run
        (["--select", "DDL10"], None, ["DDL102"]),  # a prefix does not take preview rules in
        (["--select", "DDL10", "--preview"], None, ["DDL107", "DDL102"]),
        ([], "preview = true", ["DDL113", "DDL107", "DDL102"]),
        (["--no-preview"], "preview = true", ["DDL113", "DDL102"]),  # the command line wins
        (["--preview"], "preview = false", ["DDL113", "DDL107", "DDL102"]),
    ],
)
def test_preview_rules_run_only_when_asked(capsys, tmp_path, argv, section, expected):
    """As ruff's preview: the rules right less than 0.8 of the time on never-seen public code print nothing
    unless --preview, `preview = true` or an exact --select asks for them."""
    assert "DDL107" in doctor.PREVIEW and not {"DDL113", "DDL102"} & doctor.PREVIEW
    if section is not None:
        (tmp_path / "pyproject.toml").write_text(f"[tool.ddp-doctor]\n{section}\n")
    train = tmp_path / "train.py"
    train.write_text(
        THREE.replace(
            "torch.load('w.pt', weights_only=False)", "torch.save(net.state_dict(), 'w.pt')"
        )
    )
    assert reported(capsys, train, *argv) == (1, expected)


def test_a_preview_setting_that_is_not_a_boolean_is_one_error_line(capsys, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.ddp-doctor]\npreview = "yes"\n')
    (tmp_path / "train.py").write_text(THREE)
    code, out, err = run(capsys, tmp_path / "train.py")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and "it is true or false" in err


def test_explain_marks_the_preview_rules_and_gives_each_rules_measured_precision(capsys):
    listing = doctor.explain(None).splitlines()
    assert [line.split()[0] for line in listing if line.endswith(" (preview)")] == [
        code for code in doctor.RULES if code in doctor.PREVIEW
    ]
    true, judged = doctor.MEASURED["DDL107"]
    assert f"right in {true} of {judged} findings" in doctor.explain("DDL107")
    assert "a preview rule, run with --preview" in doctor.explain("DDL107")
    assert doctor.explain("DDL102").endswith("runs by default.")
    assert "no finding yet" in doctor.explain("DDL104")  # never fired in public: runs by default
    assert "DDL104" not in doctor.PREVIEW


def test_a_rule_no_never_seen_set_has_measured_is_a_preview_rule(monkeypatch):
    monkeypatch.setattr(doctor, "UNMEASURED", frozenset({"DDL104"}))
    assert "a preview rule until one measures it" in doctor.explain("DDL104")


def test_a_rules_own_bug_is_one_error_line_and_the_other_rules_still_report(
    capsys, three, monkeypatch
):
    """A rule that raises costs its own findings, named in one `error:` line (exit 2), not a traceback and not
    the other rules' findings (ultra_light_trainer's `write_text(...)`, a function and not a Path's method,
    crashed the whole file in corpus 33)."""

    def broken(self):
        raise AttributeError("'Name' object has no attribute 'value'")

    monkeypatch.setattr(doctor.UnsafeLoad, "begin", broken)
    code, out, err = run(capsys, three)
    assert code == 2
    [line] = err.splitlines()
    assert line.startswith(f"error: {three}: DDL109 failed on it (AttributeError: ")
    assert "doctor.py:" in line and "Traceback" not in err
    assert [row.split()[1] for row in out.splitlines()] == ["DDL113", "DDL102"]


def test_doctors_own_bug_outside_the_rules_is_one_error_line_and_the_next_file_is_checked(
    capsys, three, tmp_path, monkeypatch
):
    other = tmp_path / "b.py"
    other.write_text("import torch\ntorch.load('w.pt', weights_only=False)\n")

    def broken(*args, **kwargs):
        raise KeyError("boom")

    real = doctor.check_source
    monkeypatch.setattr(
        doctor,
        "check_source",
        lambda text, name, **kw: broken() if name == str(three) else real(text, name, **kw),
    )
    code, out, err = run(capsys, three, other)
    assert code == 2
    [line] = err.splitlines()
    assert line.startswith(f"error: {three}: doctor failed on it (KeyError: 'boom' (doctor.py:")
    assert [row.split()[1] for row in out.splitlines()] == ["DDL109"]


def test_a_function_named_write_text_is_not_a_paths_method(tmp_path):
    """ultra_light_trainer (corpus 33): a module of the project that calls its own `write_text(path, s)`."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "util.py").write_text(
        "def write_text(path, s):\n    open(path, 'w').write(s)\n"
        "def log(path, s):\n    write_text(path, s)\n"
    )
    (tmp_path / "train.py").write_text(
        "import torch.distributed as dist\nfrom util import log\ndist.init_process_group('nccl')\n"
        "log('out.txt', 'x')\ndist.destroy_process_group()\n"
    )
    assert doctor.main([str(tmp_path / "train.py")]) in (0, 1)
