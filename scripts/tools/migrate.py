"""Migrate a plain single-process training script to DDP under torchrun, or to Accelerate, and prove that it
trains the same model.

    python scripts/tools/migrate.py train.py --to torchrun -o train_ddp.py
    python scripts/tools/migrate.py train.py --to accelerate -o train_accelerate.py
    python scripts/tools/migrate.py train.py --to torchrun --prove -- --epochs 1 --dropout 0

The rewrite is made on libcst's concrete syntax tree, line by line: every line it does not change is copied byte
for byte (comments, blank lines, quotes), and every line it inserts or changes ends with a comment naming the
item of guides/your-script.md it applies. The shapes it knows: the loaders, the device, a model `... .to(device)`
whose `.parameters()` an optimizer takes and an epoch loop `for epoch in ...:` calling a train function (the one
with `.backward()`), all in one main() (pytorch/examples' mnist/main.py) or all at the module level, an
`if __name__ == "__main__":` block included (vae/main.py, the PyTorch tutorials' quickstart), or an epoch loop
written out there with the backward in a loop over the training loader (the ladder's rung 1: its loader from the
project's own `data.loader`, which takes sampler=; its accumulation put under no_sync(); its saves and resume
given the bare model; a stop each process decides alone is MIG206); test functions that
sum over a `with torch.no_grad():` loop; `torch.save(model.state_dict(), ...)`. The global batch stays what the
plain script's flag says: each of the processes takes batch // world size (and the script stops with one line
when it does not divide).

It refuses, with one `error:` line naming the shape and exit code 2, what it cannot rewrite with certainty: no
DataLoader in the file, a training loop it does not recognise, a summed loss built outside the train function,
`torch.save(model)`, a script that is distributed already. What it migrates but cannot make the plain script's
training is a finding (`path:line:col: MIG2xx ...`, exit code 1): randomness drawn per sample from a process's own
generator (MIG201), random_split unseeded (MIG202), BatchNorm (MIG203: SyncBatchNorm on GPUs only), a test sum
of per-batch means over the set's size (MIG204), an epoch sum it does not reduce (MIG205), a training loop left on
a condition each process decides alone (MIG206).

--to accelerate writes `Accelerator(cpu=not torch.cuda.is_available())`, `prepare` (model, optimizer, training
loader), `accelerator.backward`, `accelerator.reduce` of the test sums, `accelerator.print`, a main-process save
of `unwrap_model(model)` and `end_training()`; the train and test functions of a main() take the Accelerator as a
new last parameter.

--prove runs the plain script in one process and the migration under `torchrun --standalone --nproc_per_node=2`
(`accelerate launch` with accelerate_configs/cpu_2proc.yaml for --to accelerate; gloo on a CPU) with the flags
after `--`, each saving its weights where the tool says (the save path's flag is set for each run, or each runs
in its own directory), then prints compare.py's report and exits with its code. Where no proof can hold (MIG201,
MIG203, dropout with a literal nonzero p, no torch.manual_seed) it says `proof: impossible here` with the reasons
and runs nothing. guides/migrate.md shows worked runs.
"""

import argparse
import ast
import functools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import libcst as cst
import libcst.matchers as m
from doctor_fix import dotted
from libcst.metadata import MetadataWrapper, PositionProvider

GUIDE = "your-script.md"
# names the migration adds: a script that has them already would see them change meaning
ADDED = {
    "dist",
    "DDP",
    "DistributedSampler",
    "Subset",
    "local_rank",
    "rank",
    "world_size",
    "sampler",
}
ADDED_IN_TEST = {"totals", "test_size"}
RANDOM_CALLS = {"rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like"}
RANDOM_CALLS |= {"normal", "bernoulli", "multinomial", "poisson"}
# what a DDP wrapper or a prepared model answers itself; any other attribute is the model's own (item 16)
MODULE_ATTRS = set(
    """add_module apply bfloat16 buffers children compile cpu cuda double eval extra_repr float forward
    get_buffer get_parameter get_submodule half load_state_dict modules named_buffers named_children
    named_modules named_parameters parameters register_backward_hook register_buffer register_forward_hook
    register_forward_pre_hook register_full_backward_hook register_module register_parameter requires_grad_
    share_memory state_dict to to_empty train training type xpu zero_grad module no_sync""".split()
)
WRITES = {
    "save_image",
    "savefig",
    "imsave",
}  # files every process would write: rank 0's alone (item 11)
DROPOUTS = {"Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"}
DROPOUTS |= {"dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout"}


class Refused(Exception):
    """The script is not of a shape this first cut rewrites with certainty: one line says which."""


def calls_named(node, *names):
    """Every call in `node` whose function's last name is one of `names`."""
    return [c for c in m.findall(node, m.Call()) if last_name(c.func) in set(names)]


def last_name(func):
    """`f` of `f(...)`, `a.b.f(...)` and `x(y).f(...)` alike."""
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else ""


def keyword(call, name):
    return next((a for a in call.args if a.keyword and a.keyword.value == name), None)


def bare_model(model, accelerate):
    """The model inside the wrapper: what saves, loads and the model's own methods use (items 11 and 16)."""
    return f"accelerator.unwrap_model({model})" if accelerate else f"{model}.module"


def passed_as(call, function, name):
    """The parameter of `function` that `call` hands the name `name` to (by position or keyword); `name` itself
    when the call does not pass it (a global), None when no parameter takes it."""
    params = [p.name.value for p in function.params.params]
    found = name
    for i, a in enumerate(call.args):
        if isinstance(a.value, cst.Name) and a.value.value == name:
            found = a.keyword.value if a.keyword else params[i] if i < len(params) else None
    return found


def batch_arg(loader, params=None):
    """The loader call's batch size argument: `batch_size=`, or the positional one where the function takes it
    (DataLoader's second; a project loader's `params`)."""
    batch = keyword(loader, "batch_size")
    positional = [a for a in loader.args if not a.keyword and not a.star]
    at = params.index("batch_size") if params else 1
    if batch is None and len(positional) > at:
        batch = positional[at]
    return batch


def is_sum(arg):
    return isinstance(arg.value, cst.SimpleString) and arg.value.evaluated_value == "sum"


def project_files(path, module, depth=2):
    """The script's own modules, and theirs in turn (`depth` imports deep): where its flags may be declared
    (rung 1 -> common/entry.py -> common/flags.py)."""
    root = Path(path).resolve().parent
    found, frontier = [], list(project_modules(root, module)[0].values())
    for _ in range(depth):
        frontier = [f for f in dict.fromkeys(frontier) if f not in found]
        found += frontier
        following = []
        for file in frontier:
            try:
                tree = cst.parse_module(file.read_text())
            except (OSError, UnicodeDecodeError, cst.ParserSyntaxError):
                continue
            following += list(project_modules(root, tree)[0].values())
        frontier = following
    return found


def project_modules(here, module):
    """The script's own modules that it imports, found beside it as Python's sys.path[0] finds them, by the names
    the script calls them: `from common import data` -> {"data": common/data.py}, `import utils` -> {"utils":
    utils.py}; and functions imported by name: `from common.data import loader` -> {"loader": (data.py,
    "loader")}. `here`: the script's folder."""

    def find(name):
        base = here.joinpath(*name.split("."))
        return next(
            (f for f in (base.with_suffix(".py"), base / "__init__.py") if f.is_file()), None
        )

    modules, functions = {}, {}
    for node in m.findall(module, m.Import() | m.ImportFrom()):
        if isinstance(node, cst.Import):
            for alias in node.names:
                name = dotted(alias.name)
                if find(name):
                    modules[alias.asname.name.value if alias.asname else name] = find(name)
        elif not node.relative and node.module and not isinstance(node.names, cst.ImportStar):
            base = dotted(node.module)
            for alias in node.names:
                local = alias.asname.name.value if alias.asname else alias.name.value
                if find(f"{base}.{alias.name.value}"):
                    modules[local] = find(f"{base}.{alias.name.value}")
                elif find(base):
                    functions[local] = (find(base), alias.name.value)
    return modules, functions


@functools.cache
def parsed(file):
    """A project module's tree (ast: read, never run), None when it does not parse."""
    try:
        return ast.parse(Path(file).read_text())
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None


def loader_factory(tree):
    """The top-level functions of a module that build and return a DataLoader and take `sampler` and
    `batch_size` (the ladder's `data.loader`): name -> parameter names."""
    found = {}
    for f in tree.body if tree else []:
        if not isinstance(f, ast.FunctionDef) or f.args.vararg or f.args.kwarg:
            continue
        params = [a.arg for a in f.args.posonlyargs + f.args.args]
        returns = [
            n.value
            for n in ast.walk(f)
            if isinstance(n, ast.Return) and isinstance(n.value, ast.Call)
        ]
        if {"sampler", "batch_size"} <= set(params) and any(
            (getattr(c.func, "attr", None) or getattr(c.func, "id", None)) == "DataLoader"
            for c in returns
        ):
            found[f.name] = params
    return found


def loader_factories(path, module):
    """Call name -> parameter names, for the functions of the script's own modules that build a DataLoader and
    take a sampler: a call of one is a DataLoader whose sampler the migration gives, as the ladder's rung 4 gives
    `data.loader` a DistributedSampler."""
    modules, functions = project_modules(Path(path).resolve().parent, module)
    found = {}
    for local, file in modules.items():
        for name, params in loader_factory(parsed(file)).items():
            found[f"{local}.{name}"] = params
    for local, (file, name) in functions.items():
        params = loader_factory(parsed(file)).get(name)
        if params:
            found[local] = params
    return found


class Migration:
    """The edits of one migration, made on whole lines of the source; nothing else changes."""

    def __init__(self, source, path):
        self.path = path
        self.lines = source.splitlines(keepends=True)
        try:
            wrapper = MetadataWrapper(cst.parse_module(source))
        except cst.ParserSyntaxError as e:
            raise Refused(f"{path} does not parse: {str(e).splitlines()[0]}") from None
        self.module = wrapper.module
        self.pos = wrapper.resolve(PositionProvider)
        self.replaced = {}  # first line -> (last line, new text)
        self.before = {}  # line -> inserted text
        self.findings = []
        # no_sync() on some micro-batches: contextlib.nullcontext() on the rest
        self.uses_contextlib = False

    # positions and text ---------------------------------------------------------------------------------------
    def line(self, node):
        return self.pos[node].start.line

    def last_line(self, node):
        if isinstance(node, cst.SimpleStatementLine):
            return max(self.pos[s].end.line for s in node.body)
        # a compound statement: its last clause's last statement's
        for tail in ("finalbody", "orelse"):
            if getattr(node, tail, None):
                return self.last_line(getattr(node, tail))
        if getattr(node, "handlers", None):
            return self.last_line(node.handlers[-1])
        return self.last_line(node.body.body[-1])

    def indent(self, node):
        text = self.lines[self.line(node) - 1]
        return text[: len(text) - len(text.lstrip())]

    def code(self, node):
        return self.module.code_for_node(node)

    def render(self, statement, comment, indent):
        """A statement, changed, on its own lines, with the item's comment on its last line (None: the comments
        are on the lines it changed)."""
        old = statement.trailing_whitespace.comment
        note = f"{old.value}; {comment}" if old else f"# {comment}"
        statement = statement.with_changes(
            leading_lines=[],
            trailing_whitespace=statement.trailing_whitespace
            if comment is None
            else cst.TrailingWhitespace(
                whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(note)
            ),
        )
        text = cst.Module(body=[statement]).code
        if '"""' in text or "'''" in text:
            raise Refused(
                f"line {self.line(statement)}: a multi-line string in a changed statement"
            )
        # a line inside brackets is indented relative to its block: put the block's indentation back
        first, *rest = text.splitlines(keepends=True)
        return indent + first + "".join(indent + t if t.strip() else t for t in rest)

    def replace(self, statement, text):
        first, last = self.line(statement), self.last_line(statement)
        self.replaced[first] = (last, text)

    def current(self, statement):
        """The statement's text as the edits so far leave it."""
        first = self.line(statement)
        if first in self.replaced:
            return self.replaced[first][1]
        return "".join(self.lines[first - 1 : self.last_line(statement)])

    def insert(self, line, text):
        self.before[line] = self.before.get(line, "") + text

    def guard(self, statement, condition, comment):
        """`if <condition>:` above the statement, which moves in by four spaces."""
        text = self.current(statement)
        if '"""' in text or "'''" in text:
            raise Refused(
                f"line {self.line(statement)}: a multi-line string in a statement that must move under "
                f"`if {condition}:`: not rewritten"
            )
        pad = self.indent(statement)
        body = "".join("    " + t if t.strip() else t for t in text.splitlines(keepends=True))
        self.replace(statement, f"{pad}if {condition}:  # {comment}\n{body}")

    def output(self):
        out, i = [], 1
        while i <= len(self.lines):
            out.append(self.before.get(i, ""))
            if i in self.replaced:
                last, text = self.replaced[i]
                out.append(text)
                i = last + 1
            else:
                out.append(self.lines[i - 1])
                i += 1
        out.append(self.before.get(len(self.lines) + 1, ""))
        return "".join(out)

    def finding(self, node, code, message):
        p = self.pos[node].start
        self.findings.append(f"{self.path}:{p.line}:{p.column + 1}: {code} {message}")


def sets_device(statement, branch=False):
    """`device = torch.device(...)` (or `torch.accelerator.current_accelerator()`), or an if/elif/else whose every
    branch is one line `device = ...`: the whole statement is replaced."""
    if isinstance(statement, cst.If):
        branches, node = [statement.body], statement.orelse
        while isinstance(node, cst.If):
            branches.append(node.body)
            node = node.orelse
        if node is None:
            return False  # without an else, the device may be left unset
        branches.append(node.body)
        return all(len(b.body) == 1 and sets_device(b.body[0], branch=True) for b in branches)
    found = assignment(statement)
    return bool(found and found[0] == "device" and (branch or device_value(found[1])))


def device_value(value):
    """`torch.device(...)`, `torch.accelerator.current_accelerator()` (or its `.type`), a string, or a
    conditional expression of them (the quickstart's `"cuda" if torch.cuda.is_available() else "cpu"`)."""
    if isinstance(value, cst.IfExp):
        return device_value(value.body) and device_value(value.orelse)
    if isinstance(value, cst.Attribute) and value.attr.value == "type":
        return device_value(value.value)
    if isinstance(value, cst.SimpleString):
        return True
    return isinstance(value, cst.Call) and dotted(value.func) in (
        "torch.device",
        "torch.accelerator.current_accelerator",
    )


def is_main_block(statement):
    """`if __name__ == "__main__":` without an else."""
    return (
        isinstance(statement, cst.If)
        and statement.orelse is None
        and m.matches(
            statement.test,
            m.Comparison(
                left=m.Name("__name__"),
                comparisons=[m.ComparisonTarget(m.Equal(), m.SimpleString())],
            ),
        )
        and statement.test.comparisons[0].comparator.evaluated_value == "__main__"
    )


def module_scope(module):
    """A module-level script's own statements in order, an `if __name__ == "__main__":` block's body in its
    place; functions and classes left out."""
    out = []
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef | cst.ClassDef):
            continue
        out += list(statement.body.body) if is_main_block(statement) else [statement]
    return out


def names_in(node):
    """The names a piece of code binds or reads: `x` of `x.y`, not `y` (`torch.accelerator` is no name)."""
    attributes = {id(a.attr) for a in m.findall(node, m.Attribute())}
    return {n.value for n in m.findall(node, m.Name()) if id(n) not in attributes}


def statements_of(function):
    return list(function.body.body)


def top_functions(module):
    return {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}


def assignment(statement):
    """(target name, value) of `name = value` on a line of its own; None otherwise."""
    if (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Assign)
        and len(statement.body[0].targets) == 1
        and isinstance(statement.body[0].targets[0].target, cst.Name)
    ):
        return statement.body[0].targets[0].target.value, statement.body[0].value
    return None


def enclosing_statements(root):
    return m.findall(root, m.SimpleStatementLine())


def print_statements(root):
    return [
        s
        for s in enclosing_statements(root)
        if len(s.body) == 1
        and isinstance(s.body[0], cst.Expr)
        and isinstance(s.body[0].value, cst.Call)
        and dotted(s.body[0].value.func) == "print"
    ]


def to_torchrun(source, path="train.py"):
    """The migration to DDP under torchrun and its findings; Refused when the shape is not one this cut knows."""
    return rewrite(source, path, accelerate=False)


def to_accelerate(source, path="train.py"):
    """The migration to Accelerate (Accelerator, prepare, backward, reduce, print, unwrap_model)."""
    return rewrite(source, path, accelerate=True)


def rewrite(source, path, accelerate):
    mig = Migration(source, path)
    module = mig.module

    # what it will not touch ---------------------------------------------------------------------------------
    norms = [
        node
        for node in m.findall(module, m.Name() | m.Attribute())
        if "BatchNorm" in (dotted(node) if isinstance(node, cst.Attribute) else node.value)
    ]
    # a torchvision model (siamese_network's resnet18): its BatchNorm is in another module, unseen here
    norms += [
        c.func for c in m.findall(module, m.Call()) if "torchvision.models." in dotted(c.func)
    ]
    for node in m.findall(module, m.Import() | m.ImportFrom()):
        text = mig.code(node)
        if "torch.distributed" in text or "accelerate" in text or "DistributedDataParallel" in text:
            raise Refused(
                f"line {mig.line(node)}: the script is distributed already ({text.strip()})"
            )
    used = names_in(module)
    if "torch" not in used:
        raise Refused("the script does not import torch")
    clashes = sorted(used & (ADDED | ({"accelerator"} if accelerate else set())))
    if clashes:
        raise Refused(
            f"the script already uses the name(s) {', '.join(clashes)}, which the migration adds: "
            f"rename them first"
        )

    functions = top_functions(module)
    # a DataLoader, or a call of the project's own function that builds one and takes sampler= (data.loader)
    factories = loader_factories(path, module)
    loaders = [
        c
        for c in m.findall(module, m.Call())
        if last_name(c.func) == "DataLoader" or dotted(c.func) in factories
    ]
    if not loaders:
        raise Refused(
            "no DataLoader is built in this file, nor by a function of the script's own modules that takes "
            "sampler= (a loader built elsewhere, or batches indexed by hand as in word_language_model): "
            f"shard the data by hand ({GUIDE} items 4 and 15)"
        )
    for call in loaders:
        if any(a.star == "*" or (a.star and not isinstance(a.value, cst.Name)) for a in call.args):
            raise Refused(
                f"line {mig.line(call)}: the DataLoader takes its arguments from *args or from an "
                f"expression: pass them as keywords in the call, or **a_dict ({GUIDE} item 4)"
            )
    homes = [
        name for name, f in functions.items() if any(c in loaders for c in m.findall(f, m.Call()))
    ]
    module_level = not homes  # vae/main.py's shape: loaders, model and loop at the module level
    if module_level:
        body = module_scope(module)
        main = cst.Module(body=body)  # the module's own code: functions and classes left out
        label, where = "the module level", "at the module level"
    else:
        main = functions[homes[0]]
        body = statements_of(main)
        label, where = f"{main.name.value}()", f"in {main.name.value}()"
    if len(homes) > 1 or any(c not in m.findall(main, m.Call()) for c in loaders):
        raise Refused(
            "the DataLoaders are not all built in one top-level function (a main()), nor all at the "
            "module level: not rewritten"
        )
    built = {}  # loader name -> its statement
    for statement in body:
        found = assignment(statement)
        if found and isinstance(found[1], cst.Call) and found[1] in loaders:
            built[found[0]] = statement
    if len(built) != len(loaders):
        raise Refused(
            f"a DataLoader {where} is not assigned to a name on a line of its own "
            f"(`loader = DataLoader(...)`): not rewritten"
        )

    # the training loop: in a train function the epoch loop calls, or written out in main() ------------------
    inline = bool(calls_named(main, "backward"))
    trainers = {n for n, f in functions.items() if calls_named(f, "backward") and f is not main}
    if inline and trainers:
        raise Refused(
            f"{label} calls backward() and so does {sorted(trainers)[0]}(): which one trains is not "
            f"certain"
        )
    loops = [
        s
        for s in body
        if isinstance(s, cst.For)
        and any(dotted(c.func) in trainers for c in m.findall(s, m.Call()))
    ]
    if inline:
        loop, inner, train_name, backward = inline_loop(main, body, built, where)
        train_fn, train_call, loops = main, None, [loop]
    if len(loops) != 1 or not isinstance(loops[0].target, cst.Name):
        raise Refused(
            f"no single epoch loop `for epoch in ...:` {where} calling a train function "
            f"(one with .backward()): a custom training loop this first cut does not recognise"
        )
    loop = loops[0]
    train_calls = [c for c in m.findall(loop, m.Call()) if dotted(c.func) in trainers]
    if len(train_calls) != 1 and not inline:
        raise Refused("the epoch loop calls more than one train function: not recognised")
    if not inline:
        train_call = train_calls[0]
        train_fn = functions[dotted(train_call.func)]
        passed = [a.value.value for a in train_call.args if isinstance(a.value, cst.Name)]
        train_names = [n for n in passed if n in built]
        if not train_names and module_level:  # vae's train(epoch) reads the global loader
            train_names = [n for n in built if n in names_in(train_fn)]
        if len(train_names) != 1:
            raise Refused(
                "the train function is not passed (or does not read) exactly one DataLoader"
            )
        train_name = train_names[0]
    train_stmt = built[train_name]
    train_loader = assignment(train_stmt)[1]
    if len(calls_named(train_fn, "backward")) != 1:
        raise Refused(f"{train_fn.name.value}() calls backward() more than once: not recognised")

    # the device and the model ---------------------------------------------------------------------------------
    devices = [s for s in body if sets_device(s)]
    if len(devices) != 1:
        raise Refused(
            f"no `device = torch.device(...)` line (or an if/elif/else of them) {where}: the device "
            f"must come from LOCAL_RANK ({GUIDE} item 2), and this first cut replaces that statement only"
        )
    device_stmt = devices[0]
    optimized = {
        dotted(c.func.value)
        for c in calls_named(main, "parameters")
        if isinstance(c.func, cst.Attribute)
    }
    models = []
    for s in body:
        found = assignment(s)
        if (
            found
            and found[0] in optimized
            and isinstance(found[1], cst.Call)
            and isinstance(found[1].func, cst.Attribute)
            and found[1].func.attr.value == "to"
        ):
            models.append((found[0], s))
    optimizing = [
        s
        for s in body
        if assignment(s) and any(last_name(c.func) == "parameters" for c in m.findall(s, m.Call()))
    ]
    if (
        len(models) > 1 and optimizing
    ):  # the quickstart builds a fresh model to load the saved weights
        models = [(n, s) for n, s in models if body.index(s) < body.index(optimizing[0])][-1:]
    if len(models) != 1:
        raise Refused(
            f"no single `model = ....to(device)` {where} whose parameters an optimizer "
            f"takes: the DDP wrap goes after it ({GUIDE} item 5)"
        )
    model, model_stmt = models[0]
    if not body.index(device_stmt) < body.index(model_stmt):
        raise Refused("the device is set after the model: not recognised")

    # the process group: before the device, the model and every loader, whichever comes first -----------------
    os_import = any(
        isinstance(s, cst.Import) and any(dotted(n.name) == "os" and not n.asname for n in s.names)
        for s in m.findall(module, m.Import())
    )
    first = min((device_stmt, model_stmt, *built.values()), key=body.index)
    pad = mig.indent(first)
    if accelerate:
        group = (
            f"{pad}accelerator = Accelerator(cpu=not torch.cuda.is_available())  # real processes on a "
            f"CPU too: {GUIDE} item A\n"
            f"{pad}rank, world_size = accelerator.process_index, accelerator.num_processes  # {GUIDE} "
            f"item A\n"
        )
    else:
        group = (
            f'{pad}local_rank = int(os.environ["LOCAL_RANK"])  # torchrun sets it: {GUIDE} item 1\n'
            f"{pad}if torch.cuda.is_available():  # this process's own GPU: {GUIDE} item 2\n"
            f"{pad}    torch.cuda.set_device(local_rank)\n"
            f"{pad}dist.init_process_group()  # gloo on a CPU, NCCL on GPUs: {GUIDE} item 2\n"
            f"{pad}rank, world_size = dist.get_rank(), dist.get_world_size()  # {GUIDE} item 2\n"
        )
    pad = mig.indent(device_stmt)
    if accelerate:
        device_line = f"{pad}device = accelerator.device  # {GUIDE} item A\n"
    else:
        device_line = (
            f'{pad}device = torch.device(f"cuda:{{local_rank}}" if torch.cuda.is_available() else "cpu")'
            f"  # {GUIDE} item 2\n"
        )
    if first is device_stmt:
        mig.replace(device_stmt, group + device_line)
    else:  # the quickstart builds its loaders before it picks the device
        mig.insert(mig.line(first), group)
        mig.replace(device_stmt, device_line)

    # the training DataLoader -> a DistributedSampler, batch // world size ---------------------------------------
    if keyword(train_loader, "sampler") or keyword(train_loader, "batch_sampler"):
        raise Refused(
            f"line {mig.line(train_loader)}: the training DataLoader has a sampler already"
        )
    if dataset_arg(train_loader) is None:
        raise Refused(
            f"line {mig.line(train_loader)}: the training DataLoader has no dataset argument"
        )
    seeds = [c for c in calls_named(main, "manual_seed") if dotted(c.func) == "torch.manual_seed"]
    seed = mig.code(seeds[0].args[0].value) if seeds and seeds[0].args else "0"
    explicit = keyword(train_loader, "batch_size") and keyword(train_loader, "shuffle")
    if any(a.star == "**" for a in train_loader.args) and not explicit:
        sampler = loader_from_dict(mig, train_loader, train_stmt, loaders, seed, accelerate)
    else:  # a ** dict beside batch_size= and shuffle= in the call cannot hold either (vae's **kwargs)
        params = factories.get(dotted(train_loader.func))
        sampler = loader_from_call(mig, train_loader, train_stmt, seed, accelerate, used, params)
        global_batch(mig, train_loader, params, loaders)
    drop = keyword(train_loader, "drop_last")
    if accelerate and not (drop and m.matches(drop.value, m.Name("True"))):
        mig.finding(
            train_loader,
            "MIG207",
            "prepare() evens the last batch of an epoch: when the training set is not a multiple of the "
            "global batch, it completes each process's last batch with samples from the epoch's start "
            "(even_batches), so the last step trains on samples the plain script's last step does not have "
            "(measured: 24 of 64 repeated with 1,000 samples); exact with drop_last=True, with a set that is a "
            f"multiple of the batch, or with --to torchrun, whose sampler splits the tail evenly ({GUIDE} item A)",
        )
    mig.insert(mig.line(train_stmt), sampler)
    mig.insert(
        mig.line(loop.body.body[0]),
        ""
        if accelerate
        else f"{mig.indent(loop.body.body[0])}sampler.set_epoch({loop.target.value})  # a new order every "
        f"epoch: {GUIDE} item 4\n",
    )

    # the DDP wrap, the seeds -----------------------------------------------------------------------------------
    pad = mig.indent(model_stmt)
    reseed = (
        f"{pad}torch.manual_seed({seed} + rank)  # from here on, each process its own dropout: "
        f"{GUIDE} item 3\n"
        if seeds
        else ""
    )
    sync = ""
    if norms:
        norm = mig.code(norms[0])
        norm += "" if "BatchNorm" in norm else ": a torchvision model, most have it"
        mig.finding(
            norms[0],
            "MIG203",
            f"BatchNorm ({norm}): under DDP each process normalizes its own share of the "
            f"batch and keeps its own statistics: converted to SyncBatchNorm on GPUs only (a CPU module "
            f"refuses it), so on a CPU the migration trains with per-process statistics and no proof "
            f"holds; prove with BatchNorm frozen ({GUIDE} item 19)",
        )
        sync = (
            f"{pad}if torch.cuda.is_available():  # statistics over the global batch (GPUs only): "
            f"{GUIDE} item 19\n"
            f"{pad}    {model} = torch.nn.SyncBatchNorm.convert_sync_batchnorm({model})\n"
        )
    optimizers = [
        (assignment(s)[0], s)
        for s in body
        if assignment(s)
        and any(dotted(c.func) == f"{model}.parameters" for c in m.findall(s, m.Call()))
    ]
    if accelerate and len(optimizers) != 1:
        raise Refused(
            f"no single optimizer built from {model}.parameters() on a line of its own {where}: "
            f"prepare() takes it ({GUIDE} item A)"
        )
    if accelerate:
        optimizer, optimizer_stmt = optimizers[0]
        after = max((model_stmt, optimizer_stmt, train_stmt), key=body.index)
        if sync:
            mig.insert(mig.last_line(model_stmt) + 1, sync)
        pad = mig.indent(after)
        mig.insert(
            mig.last_line(after) + 1,
            f"{pad}{model}, {optimizer}, {train_name} = accelerator.prepare({model}, {optimizer}, "
            f"{train_name})  # DDP, and the loader sharded: {GUIDE} item A\n"
            + reseed.replace(mig.indent(model_stmt), pad, 1),
        )
    else:
        mig.insert(
            mig.last_line(model_stmt) + 1,
            f"{sync}{pad}{model} = DDP({model}, device_ids=[local_rank] if torch.cuda.is_available() "
            f"else None)  # {GUIDE} item 5\n{reseed}",
        )

    # a summed training loss: times the world size --------------------------------------------------------
    backward = calls_named(train_fn, "backward")[0]
    helpers = [
        functions[dotted(c.func)]
        for c in m.findall(train_fn, m.Call())
        if dotted(c.func) in functions
    ]
    summed = [
        a
        for f in [train_fn, *helpers]
        for a in m.findall(f, m.Arg())
        if a.keyword and a.keyword.value == "reduction" and is_sum(a)
    ]
    test_fns = {}  # function -> (the loader's name in it, the loader's name where it is built)
    for call in m.findall(main, m.Call()):
        name = dotted(call.func)
        for i, a in enumerate(call.args):
            if (
                isinstance(a.value, cst.Name)
                and a.value.value in built
                and a.value.value != train_name
            ):
                if inline and name in READ_WHOLE:
                    continue  # main's own loop over a test loader: whole on every process, correct
                if name not in functions:
                    raise Refused(
                        f"line {mig.line(call)}: the loader {a.value.value} is passed to {name}(), "
                        f"not a function of this file: not recognised"
                    )
                params = functions[name].params.params
                if i >= len(params) or a.keyword:
                    raise Refused(f"{name}() takes its loader by keyword or *args: not recognised")
                test_fns.setdefault(name, (params[i].name.value, a.value.value))
        if module_level and name in functions and (inline or name != train_fn.name.value):
            for loader_name in built:  # vae's test(epoch) reads the global loader
                if loader_name != train_name and loader_name in names_in(functions[name]):
                    test_fns.setdefault(name, (loader_name, loader_name))
    for a in m.findall(module, m.Arg()):
        if a.keyword and a.keyword.value == "reduction" and is_sum(a) and a not in summed:
            inside = [
                f for n, f in functions.items() if n in test_fns and a in m.findall(f, m.Arg())
            ]
            if not inside:
                owner = [n for n, f in functions.items() if a in m.findall(f, m.Arg())]
                raise Refused(
                    f"line {mig.line(a)}: a summed loss (reduction='sum') in "
                    f"{owner[0] + '()' if owner else 'module code'}, neither the train function nor a "
                    f"test function reading a DataLoader of {label}: whether it trains, and on what, "
                    f"must be read by hand ({GUIDE} items 7 and 18)"
                )
    backward_stmt = next(
        s for s in enclosing_statements(train_fn) if backward in m.findall(s, m.Call())
    )
    if summed or accelerate:
        if not isinstance(backward.func, cst.Attribute) or not m.matches(
            backward_stmt, m.SimpleStatementLine(body=[m.Expr(value=backward)])
        ):
            raise Refused(
                f"line {mig.line(backward)}: backward() not on a line of its own: not recognised"
            )
        statement = backward_stmt
        target = backward.func.value
        loss = mig.code(target.with_changes(lpar=[], rpar=[]))  # `(loss / accum)` -> loss / accum
        times = loss if isinstance(target, cst.Name | cst.Attribute | cst.Call) else f"({loss})"
        # the train function has no world_size of its own: read it from the group
        if accelerate:
            scaled = f"{times} * accelerator.num_processes" if summed else loss
            scaled = f"accelerator.backward({scaled})\n"
        else:
            scaled = f"({times} * dist.get_world_size()).backward()\n"
        why = f"a summed loss: DDP averages the gradients: {GUIDE} item 18"
        if accelerate:
            why = f"instead of backward(): {GUIDE} item A" + (", and item 18" if summed else "")
        scaled = cst.parse_statement(scaled).with_changes(
            trailing_whitespace=statement.trailing_whitespace
        )
        mig.replace(statement, mig.render(scaled, why, mig.indent(statement)))

    # the test functions: a shard each, the sums all-reduced ---------------------------------------------------
    for name, (inside, loader_name) in test_fns.items():
        migrate_test(mig, functions[name], inside, accelerate)
        statement = built[loader_name]
        call = assignment(statement)[1]
        data = dataset_arg(call)
        if data is None:
            raise Refused(f"line {mig.line(call)}: the test DataLoader has no dataset argument")
        hoisted = ""
        if not isinstance(data.value, cst.Name):  # built in the call: named first, to be sharded
            ds = fresh_name(f"{loader_name}_dataset", used)
            hoisted = hoist(mig, data.value, ds, statement)
        else:
            ds = data.value.value
        shard = cst.parse_expression(f"Subset({ds}, range(rank, len({ds}), world_size))")
        changed = statement.with_changes(
            body=[
                statement.body[0].with_changes(
                    value=call.deep_replace(data, data.with_changes(value=shard))
                )
            ]
        )
        if mig.line(statement) not in mig.replaced:
            mig.replace(
                statement,
                hoisted
                + mig.render(
                    changed, f"each process a shard: {GUIDE} item 7", mig.indent(statement)
                ),
            )
    if inline:
        reduce_inline_sums(mig, loop, inner, backward, accelerate, bool(summed))
        agreement(mig, loop)
    else:
        reduce_train_sums(mig, train_fn, train_call, train_name, accelerate)

    # saving: rank 0, the bare model -------------------------------------------------------------------------
    saved_at = None
    for save in [c for c in m.findall(module, m.Call()) if dotted(c.func) == "torch.save"]:
        if save not in m.findall(main, m.Call()):
            raise Refused(f"line {mig.line(save)}: torch.save outside {label}: not rewritten")
        saved = save.args[0].value if save.args else None
        if not (
            isinstance(saved, cst.Call)
            and isinstance(saved.func, cst.Attribute)
            and saved.func.attr.value == "state_dict"
            and dotted(saved.func.value) == model
        ):
            raise Refused(
                f"line {mig.line(save)}: torch.save of something other than {model}.state_dict() "
                f"(torch.save(model) pickles the class: {GUIDE} item 11): not rewritten"
            )
        statement = next(s for s in enclosing_statements(main) if save in m.findall(s, m.Call()))
        unwrapped = bare_model(model, accelerate)
        bare = saved.with_changes(
            func=saved.func.with_changes(value=cst.parse_expression(unwrapped))
        )
        changed = statement.with_changes(
            body=[
                statement.body[0].with_changes(
                    value=save.with_changes(
                        args=[save.args[0].with_changes(value=bare), *save.args[1:]]
                    )
                )
            ]
        )
        mig.replace(
            statement,
            mig.render(
                changed, f"without DDP's module. prefix: {GUIDE} item 11", mig.indent(statement)
            ),
        )
        if accelerate:
            mig.insert(
                mig.line(statement),
                f"{mig.indent(statement)}accelerator.wait_for_everyone()  # {GUIDE} item C\n",
            )
        main_process = "accelerator.is_main_process" if accelerate else "rank == 0"
        mig.guard(statement, main_process, f"one writer: {GUIDE} item 11")
        saved_at = saved_at or mig.line(statement)
    loads = [
        s
        for s in enclosing_statements(main)
        if saved_at
        and mig.line(s) > saved_at
        and any(dotted(c.func) == "torch.load" for c in m.findall(s, m.Call()))
    ]
    if loads:  # the quickstart reads back what rank 0 wrote
        wait = "accelerator.wait_for_everyone()" if accelerate else "dist.barrier()"
        mig.insert(
            mig.line(loads[0]),
            f"{mig.indent(loads[0])}{wait}  # rank 0's file complete before anyone reads it: "
            f"{GUIDE} item 14\n",
        )

    # printing on rank 0, files written by rank 0, the model's own methods ------------------------------------
    trained_in = [] if inline else [train_fn]  # main()'s own prints: after the group only, below
    printing = [
        s for f in [*trained_in, *(functions[n] for n in test_fns)] for s in print_statements(f)
    ]
    group_line = mig.line(first)
    printing += [s for s in print_statements(main) if mig.line(s) > group_line]
    count_all(mig, train_fn, "accelerator.num_processes" if accelerate else "dist.get_world_size()")
    for statement in printing:
        if accelerate:
            accelerator_print(mig, statement)
        elif statement in print_statements(main):
            mig.guard(statement, "rank == 0", f"one process prints: {GUIDE} item 8")
        else:
            mig.guard(statement, "dist.get_rank() == 0", f"one process prints: {GUIDE} item 8")
    guard_writes(
        mig, main, functions, group_line, accelerate, module_level, train_fn, test_fns, model
    )
    unwrap_loads(mig, main, model, model_stmt, accelerate)
    reached = (
        None if module_level or not accelerate else [train_fn, *(functions[n] for n in test_fns)]
    )
    unwrap_uses(mig, model, model_stmt, body, functions, accelerate, reached)
    if accelerate and not module_level:  # the functions that train and test take the Accelerator
        for function in [*trained_in, *(functions[n] for n in test_fns)]:
            add_parameter(mig, function, main)
    if inline:
        no_sync(mig, inner, backward_stmt, model, accelerate)
    else:  # the train function's loop over its loader, the model by the name it has there
        named = passed_as(train_call, train_fn, model)
        batches = [
            s
            for s in statements_of(train_fn)
            if isinstance(s, cst.For) and backward in m.findall(s, m.Call())
        ]
        if named and len(batches) == 1:
            no_sync(mig, batches[0], backward_stmt, named, accelerate)

    # the end of main; the imports ---------------------------------------------------------------------------
    last = body[-1]
    if isinstance(last, cst.SimpleStatementLine) and m.findall(last, m.Return()):
        raise Refused(f"{label} ends in a return: where the group ends is not certain")
    pad = mig.indent(last)
    ending = f"{pad}dist.destroy_process_group()  # on every rank: {GUIDE} item 2\n"
    if accelerate:
        ending = (
            f"{pad}accelerator.free_memory()  # and accelerate's own references: {GUIDE} item 2\n"
            f"{pad}accelerator.end_training()  # {GUIDE} item 2\n"
        )
    mig.insert(
        mig.last_line(last) + 1,
        f"{pad}del {model}  # the DDP wrapper holds the process group: {GUIDE} item 2\n" + ending,
    )
    imports = [
        s
        for s in module.body
        if isinstance(s, cst.SimpleStatementLine)
        and isinstance(s.body[0], cst.Import | cst.ImportFrom)
    ]
    if not imports:
        raise Refused("no imports at the top of the file")
    block = "\n"
    if accelerate:
        block += (
            f"import torch.distributed.nn  # before init_process_group, or exits can abort: {GUIDE} "
            f"item 2\n"
            f"from accelerate import Accelerator  # {GUIDE} item A\n"
            f"from torch.utils.data import Subset  # {GUIDE} item 7\n"
        )
    elif not os_import:
        block += f"import os  # LOCAL_RANK: {GUIDE} item 1\n"
    if mig.uses_contextlib and not any(
        isinstance(s, cst.Import) and any(dotted(n.name) == "contextlib" for n in s.names)
        for s in m.findall(module, m.Import())
    ):
        block += f"import contextlib  # nullcontext: {GUIDE} item 6\n"
    block += (
        ""
        if accelerate
        else (
            f"import torch.distributed as dist  # {GUIDE} item 2\n"
            f"import torch.distributed.nn  # before init_process_group, or exits can abort: {GUIDE} item 2\n"
            f"from torch.nn.parallel import DistributedDataParallel as DDP  # {GUIDE} item 5\n"
            f"from torch.utils.data import DistributedSampler, Subset  # {GUIDE} items 4 and 7\n"
        )
    )
    # after the last import above the group's first line: a tutorial imports as it goes (cifar10's `import
    # torch.optim` comes after its loaders), and `os`/`dist` must be bound before the group uses them
    above = [s for s in imports if mig.line(s) < mig.line(first)] or imports[:1]
    mig.insert(mig.last_line(above[-1]) + 1, block)

    randomness(mig, functions)
    return mig.output(), mig.findings


def dataset_arg(call):
    """The DataLoader's dataset: its first positional argument or `dataset=`."""
    if call.args and not call.args[0].keyword and not call.args[0].star:
        return call.args[0]
    return keyword(call, "dataset")


def fresh_name(name, used):
    while name in used:
        name += "_"
    used.add(name)
    return name


def hoist(mig, expression, name, statement):
    """`name = <expression>` on lines of their own before the statement (a dataset built inside the
    DataLoader's call, as vae/main.py builds it): the sampler and the shard need it by name."""
    line = cst.SimpleStatementLine(
        body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=expression)]
    )
    return mig.render(line, f"named, to be sharded: {GUIDE} items 4 and 7", mig.indent(statement))


def is_write(call):
    """A call that writes a file, by its name: `save_image`, `savefig`, and a `save`, `save_*` or `write_*` of the
    project's own (`checkpoint.save(...)`, `best.save(...)`, `metrics.write_json(...)`); torch.save has rules of
    its own above."""
    name = last_name(call.func)
    return dotted(call.func) != "torch.save" and (
        name in WRITES or name == "save" or name.startswith(("save_", "write_"))
    )


class UnwrapArgs(cst.CSTTransformer):
    """`save(args, model, ...)` -> `save(args, model.module, ...)` in the calls `pick` chooses: what writes or
    loads the weights gets the bare model, without the wrapper's `module.` prefix (item 11)."""

    def __init__(self, model, unwrapped, pick):
        super().__init__()
        self.model, self.unwrapped, self.pick = model, unwrapped, pick
        self.count = 0

    def leave_Call(self, original, updated):
        if not self.pick(original):
            return updated
        args = []
        for a in updated.args:
            if isinstance(a.value, cst.Name) and a.value.value == self.model and not a.star:
                self.count += 1
                a = a.with_changes(value=cst.parse_expression(self.unwrapped))
            args.append(a)
        return updated.with_changes(args=args)


def unwrap_loads(mig, main, model, model_stmt, accelerate):
    """The model handed to a call that loads or resumes into it (`checkpoint.resume(args, model, ...)`): the bare
    model, whose state_dict's keys are the plain script's."""
    unwrapped = bare_model(model, accelerate)
    after = mig.last_line(model_stmt)
    for statement in enclosing_statements(main):
        if mig.line(statement) <= after or mig.line(statement) in mig.replaced:
            continue
        fixer = UnwrapArgs(
            model, unwrapped, lambda c: any(w in last_name(c.func) for w in ("load", "resume"))
        )
        changed = statement.visit(fixer)
        if fixer.count:
            why = f"the bare model's keys, without the wrapper's module. prefix: {GUIDE} item 11"
            mig.replace(statement, mig.render(changed, why, mig.indent(statement)))


def guard_writes(
    mig, main, functions, group_line, accelerate, module_level, train_fn, test_fns, model
):
    """A file every process would write (`save_image(...)`, `plt.savefig(...)`, a `checkpoint.save(...)` of the
    project's own, on a line of its own): rank 0 writes it, from the bare model."""
    unwrapped = bare_model(model, accelerate)
    for statement in enclosing_statements(mig.module):
        calls = [c for c in m.findall(statement, m.Call()) if last_name(c.func) in WRITES]
        own = (
            len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr)
            and isinstance(statement.body[0].value, cst.Call)
            and is_write(statement.body[0].value)
            and statement in enclosing_statements(main)
        )
        if (not calls and not own) or mig.line(statement) < group_line:
            continue
        if own and mig.line(statement) not in mig.replaced:
            write = statement.body[0].value
            fixer = UnwrapArgs(model, unwrapped, lambda c, write=write: c is write)
            changed = statement.visit(fixer)
            if fixer.count:
                why = f"the bare model: {GUIDE} item 11"
                mig.replace(statement, mig.render(changed, why, mig.indent(statement)))
        in_main = statement in enclosing_statements(main)
        owner = next((f for f in functions.values() if statement in enclosing_statements(f)), None)
        called = {dotted(c.func) for c in m.findall(main, m.Call())}
        if not in_main and (
            owner is None or owner.name.value not in called | {train_fn.name.value}
        ):
            # a method's, or a function the training never calls (fast_neural_style's stylize(), run
            # without a process group): not reached from the training, left as it is
            continue
        if accelerate:
            if not (in_main or module_level or owner in (train_fn, *test_fns)):
                raise Refused(
                    f"line {mig.line(statement)}: a file written in {owner.name.value}(), which has no "
                    f"Accelerator to ask which process is the main one: not rewritten"
                )
            condition = "accelerator.is_main_process"
        else:
            condition = "rank == 0" if in_main else "dist.get_rank() == 0"
        mig.guard(statement, condition, f"one writer: {GUIDE} item 11")


class Unwrap(cst.CSTTransformer):
    """`model.decode(...)` -> `model.module.decode(...)`: the model's own attributes, through the wrapper."""

    def __init__(self, model, unwrapped):
        super().__init__()
        self.model, self.unwrapped = model, unwrapped
        self.count = 0

    def leave_Attribute(self, original, updated):
        if (
            isinstance(updated.value, cst.Name)
            and updated.value.value == self.model
            and updated.attr.value not in MODULE_ATTRS
        ):
            self.count += 1
            return updated.with_changes(value=cst.parse_expression(self.unwrapped))
        return updated


def unwrap_uses(mig, model, model_stmt, body, functions, accelerate, reached=None):
    """The model's own methods and attributes (vae's `model.decode(z)`, item 16) go through the unwrapped
    model, in the functions and in the main code after the wrap, until the name is bound again. `reached`: the
    functions that have an Accelerator to unwrap with (a main()'s train and test functions, which take it)."""
    unwrapped = bare_model(model, accelerate)
    statements = [s for f in functions.values() for s in enclosing_statements(f)]
    for s in body[body.index(model_stmt) + 1 :]:
        found = assignment(s)
        if found and found[0] == model:
            break  # the quickstart's `model = NeuralNetwork()`: a plain model again
        statements += [s] if isinstance(s, cst.SimpleStatementLine) else enclosing_statements(s)
    for node in m.findall(mig.module, m.Attribute(value=m.Name(model))):
        if node.attr.value in MODULE_ATTRS:
            continue
        owner = [s for s in statements if node in m.findall(s, m.Attribute())]
        if not owner:
            if any(node in m.findall(f, m.Attribute()) for f in functions.values()) or any(
                node in m.findall(s, m.Attribute()) for s in body
            ):
                raise Refused(
                    f"line {mig.line(node)}: {model}.{node.attr.value} outside a statement of its own "
                    f"line: it must go through the unwrapped model ({GUIDE} item 16): not rewritten"
                )
            continue
        statement = owner[0]
        outside = [
            f
            for f in functions.values()
            if statement in enclosing_statements(f) and reached is not None and f not in reached
        ]
        if outside and not any(statement in enclosing_statements(s) for s in body):
            raise Refused(
                f"line {mig.line(node)}: {model}.{node.attr.value} in {outside[0].name.value}(), which has "
                f"no Accelerator to unwrap the model with ({GUIDE} item 16): not rewritten"
            )
        if mig.line(statement) in mig.replaced:
            raise Refused(
                f"line {mig.line(node)}: {model}.{node.attr.value} on a line the migration changes "
                f"already: not rewritten with certainty ({GUIDE} item 16)"
            )
        fixer = Unwrap(model, unwrapped)
        changed = statement.visit(fixer)
        why = f"the model's own method, not the wrapper's: {GUIDE} item 16"
        mig.replace(statement, mig.render(changed, why, mig.indent(statement)))


def reduce_train_sums(mig, train_fn, train_call, train_name, accelerate):
    """Sums the train function adds up over its loader and reads after the loop, divided by the whole set's
    size (vae's `train_loss / len(train_loader.dataset)`): all-reduced before they are read. A sum read
    otherwise (a mean of per-batch means) stays this process's: a finding."""
    loader = passed_as(train_call, train_fn, train_name)  # read as a global, or passed
    if loader is None:
        return
    body = statements_of(train_fn)
    loops = [
        s
        for s in body
        if isinstance(s, cst.For)
        and (
            dotted(s.iter) == loader
            or isinstance(s.iter, cst.Call)
            and dotted(s.iter.func) == "enumerate"
            and s.iter.args
            and dotted(s.iter.args[0].value) == loader
        )
    ]
    if len(loops) != 1:
        return
    loop = loops[0]
    sums = []
    for aug in m.findall(loop, m.AugAssign()):
        if isinstance(aug.operator, cst.AddAssign) and isinstance(aug.target, cst.Name):
            if aug.target.value not in sums:
                sums.append(aug.target.value)
    after = body[body.index(loop) + 1 :]
    reading = [s for s in after if names_in(s) & set(sums)]
    if not reading:
        return
    read = [n for n in sums if any(n in names_in(s) for s in reading)]
    statement = reading[0]
    if f"{loader}.dataset" not in mig.code(statement) or "device" not in names_in(train_fn):
        mig.finding(
            statement,
            "MIG205",
            f"{', '.join(read)} after the loop: this process's sum over its shard, printed as it is "
            f"(the plain script's divided by the whole set's size is all-reduced first): read it as "
            f"rank 0's ({GUIDE} item 7)",
        )
        return
    if names_in(train_fn) & ADDED_IN_TEST:
        raise Refused(f"{train_fn.name.value}() already uses totals: rename first")
    pad = mig.indent(statement)
    back = ", ".join(f"totals[{i}].item()" for i in range(len(read)))
    reduce = (
        f'{pad}totals = accelerator.reduce(totals, reduction="sum")  # every shard: {GUIDE} item 7\n'
        if accelerate
        else f"{pad}dist.all_reduce(totals)  # every process, every shard: {GUIDE} item 7\n"
    )
    mig.insert(
        mig.line(statement),
        f"{pad}totals = torch.tensor([{', '.join(read)}], dtype=torch.float64, device=device)  # this "
        f"shard's sums: {GUIDE} item 7\n"
        + reduce
        + f"{pad}{', '.join(read)} = {back}  # every shard's sums: {GUIDE} item 7\n",
    )


def inline_loop(main, body, built, where):
    """A training loop written out where the loaders are built (rung 1, nanoGPT-like scripts): one epoch loop
    `for epoch in ...:`, and directly in it one loop over the training loader whose body calls backward() once.
    Returns (the epoch loop, the batch loop, the training loader's name, the backward call)."""
    backwards = calls_named(main, "backward")
    if len(backwards) != 1:
        raise Refused(f"backward() is called {len(backwards)} times {where}: not recognised")
    backward = backwards[0]
    outer = [s for s in body if isinstance(s, cst.For) and backward in m.findall(s, m.Call())]
    if len(outer) != 1 or not isinstance(outer[0].target, cst.Name):
        raise Refused(
            f"the backward() {where} is not in one epoch loop `for epoch in ...:`: a custom training "
            f"loop this cut does not recognise"
        )
    inner = [
        s
        for s in outer[0].body.body
        if isinstance(s, cst.For) and backward in m.findall(s, m.Call())
    ]
    if len(inner) != 1:
        raise Refused(
            "the backward() is not in one loop over batches directly inside the epoch loop: not "
            "recognised"
        )
    read = names_in(inner[0].iter) & set(built)
    if len(read) != 1:
        raise Refused(
            "the loop over batches does not read exactly one DataLoader built beside it: not recognised"
        )
    return outer[0], inner[0], read.pop(), backward


def reduce_inline_sums(mig, loop, inner, backward, accelerate, summed):
    """An epoch's loss summed in the batch loop (`loss_sum += loss.detach()`, `running += loss.item()`) and
    read after it: each process summed its shard's per-batch means, so the mean over processes is the plain
    script's sum (equal shards, item 7). Reduced right before its first read after the batch loop; a read
    inside the batch loop (a per-step log line) stays this process's, as the train functions' do (item 8)."""
    epoch_body = list(loop.body.body)
    after = epoch_body[epoch_body.index(inner) + 1 :]
    loss = backward.func.value if isinstance(backward.func, cst.Attribute) else None
    losses = names_in(loss) if loss is not None else set()
    for statement in epoch_body[: epoch_body.index(inner)]:
        found = assignment(statement)
        if not found:
            continue
        name, value = found
        tensor = isinstance(value, cst.Call) and dotted(value.func) in (
            "torch.zeros",
            "torch.tensor",
        )
        if not (tensor or isinstance(value, cst.Integer | cst.Float)):
            continue
        adds = [
            a
            for a in m.findall(inner, m.AugAssign())
            if isinstance(a.operator, cst.AddAssign) and dotted(a.target) == name
        ]
        reading = [s for s in after if name in names_in(s)]
        if not adds or not reading:
            continue
        statement = reading[0]
        # a sum of the loss's means (divided by accum at most): the mean over processes is the plain sum
        allowed = losses | {"detach", "item", "float"}
        means = not summed and all(names_in(a.value) <= allowed for a in adds)
        if not means:
            mig.finding(
                statement,
                "MIG205",
                f"{name} after the batch loop: this process's sum over its shard, used as it is: read "
                f"it as rank 0's, or all-reduce it by hand ({GUIDE} item 7)",
            )
            continue
        pad = mig.indent(statement)
        why = f"the mean over processes of their shards' sums: {GUIDE} item 7"
        if tensor and accelerate:
            text = f'{pad}{name} = accelerator.reduce({name}, "mean")  # {why}\n'
        elif tensor:
            text = f"{pad}dist.all_reduce({name})  # {why}\n{pad}{name} /= world_size\n"
        elif accelerate:
            text = (
                f"{pad}{name} = accelerator.reduce(torch.tensor({name}, dtype=torch.float64, "
                f'device=device), "mean").item()  # {why}\n'
            )
        else:
            text = (
                f"{pad}{name} = torch.tensor({name}, dtype=torch.float64, device=device)  # {why}\n"
                f"{pad}dist.all_reduce({name})\n{pad}{name} = {name}.item() / world_size\n"
            )
        mig.insert(mig.line(statement), text)


# a written-out loop's test loader read in the main code itself (`for x, y in enumerate(test_loader)`,
# `next(iter(test_loader))`): left whole, every process reads all of it and computes what the plain script does
READ_WHOLE = {"enumerate", "iter", "len", "zip", "next"}
# a loop left on these is left at the same step by every process: they read only the step, flags, constants
PURE = {"len", "int", "float", "abs", "min", "max", "round", "bool", "isnan", "isinf", "isfinite"}


def agreement(mig, loop):
    """A `break` (or return) out of the training loops on a condition each process decides alone
    (`preempted.stop_now(step)`, a file's existence, a clock): one process leaves while the others wait in the
    next all-reduce. The migration cannot agree on it for the script: a finding (item 17)."""
    for node in m.findall(loop, m.If()):
        leaves = [
            s
            for s in node.body.body
            if m.matches(s, m.SimpleStatementLine(body=[m.Break() | m.Return()]))
        ]
        if not leaves:
            continue
        unknown = [c for c in m.findall(node.test, m.Call()) if last_name(c.func) not in PURE]
        if unknown:
            mig.finding(
                node,
                "MIG206",
                f"the training loop is left when {mig.code(unknown[0])} says so, which each process "
                f"decides alone: if it differs between processes, one leaves while the others wait in the "
                f"next all-reduce; agree first (all_reduce a flag, then every process takes the same "
                f"branch: {GUIDE} item 17)",
            )


def no_sync(mig, inner, backward_stmt, model, accelerate):
    """Accumulation written as `if micro % accum: continue` (or `if (i + 1) % accum == 0: optimizer.step()`)
    after the backward: the forward and the backward of the micro-batches that do not step go under no_sync(),
    forward included (a forward outside it has armed DDP's all-reduce already). Without it DDP all-reduces every
    micro-batch: the same gradients, accum times the communication (item 6)."""
    statements = list(inner.body.body)
    if backward_stmt not in statements:
        return
    at = statements.index(backward_stmt)
    condition = None
    for s in statements[at + 1 :]:
        if not isinstance(s, cst.If) or s.orelse is not None:
            continue
        if m.matches(s.body, m.IndentedBlock(body=[m.SimpleStatementLine(body=[m.Continue()])])):
            condition = mig.code(s.test.with_changes(lpar=[], rpar=[]))
        elif any(last_name(c.func) == "step" for c in m.findall(s.body, m.Call())):
            condition = f"not ({mig.code(s.test.with_changes(lpar=[], rpar=[]))})"
        if condition:
            test = s.test
            break
    if condition is None:
        return
    forwards = [
        i
        for i, s in enumerate(statements[: at + 1])
        if any(dotted(c.func) == model for c in m.findall(s, m.Call()))
    ]
    if not forwards:
        return
    first = forwards[0]
    block = statements[first : at + 1]
    bound = {dotted(t.target) for s in block for t in m.findall(s, m.AssignTarget())}
    if names_in(test) & bound:
        return  # the condition reads what the block computes: not certain
    pad = mig.indent(block[0])
    context = f"accelerator.no_sync({model})" if accelerate else f"{model}.no_sync()"
    text = (
        f"{pad}with {context} if {condition} else contextlib.nullcontext():  # no all-reduce but on a "
        f"step's last micro-batch: {GUIDE} item 6\n"
    )
    for s in block:
        text += "".join(
            "    " + t if t.strip() else t for t in mig.current(s).splitlines(keepends=True)
        )
        mig.replaced.pop(mig.line(s), None)
    mig.replaced[mig.line(block[0])] = (mig.last_line(block[-1]), text)
    mig.uses_contextlib = True


class CountAll(cst.CSTTransformer):
    """`batch_idx * len(data)` (or `(batch + 1) * len(X)`, as the quickstart counts) -> the same times the world
    size: every process took len(data)."""

    def __init__(self, index, batch, world_size):
        super().__init__()
        self.index, self.batch, self.world_size = index, batch, world_size
        self.count = 0

    def leave_BinaryOperation(self, original, updated):
        right = updated.right
        if (
            isinstance(updated.operator, cst.Multiply)
            and (dotted(updated.left) == self.index or self.index in names_in(updated.left))
            and isinstance(right, cst.Call)
            and dotted(right.func) == "len"
            and len(right.args) == 1
            and dotted(right.args[0].value) == self.batch
        ):
            self.count += 1
            return cst.BinaryOperation(
                updated, cst.Multiply(), cst.parse_expression(self.world_size)
            )
        return updated


def count_all(mig, train_fn, world_size):
    """The log line's sample count, `batch_idx * len(data)` as mnist/main.py prints it, counts every
    process's samples (item 8). Only that exact shape, in the loop `for batch_idx, (data, ...) in
    enumerate(loader):`, is rewritten."""
    for loop in m.findall(train_fn, m.For()):
        target = loop.target
        if not (
            isinstance(loop.iter, cst.Call)
            and dotted(loop.iter.func) == "enumerate"
            and isinstance(target, cst.Tuple)
            and len(target.elements) == 2
            and isinstance(target.elements[0].value, cst.Name)
            and isinstance(target.elements[1].value, cst.Tuple)
            and target.elements[1].value.elements
        ):
            continue
        index = target.elements[0].value.value
        batch = dotted(target.elements[1].value.elements[0].value)
        for statement in enclosing_statements(loop.body):
            counter = CountAll(index, batch, world_size)
            changed = statement.visit(counter)
            if counter.count:
                why = f"every process took len({batch}): {GUIDE} item 8"
                mig.replace(statement, mig.render(changed, why, mig.indent(statement)))


def split_check(pad, b, shown):
    return (
        f"{pad}if {b} % world_size:  # the global batch must split evenly: {GUIDE} item 4\n"
        f'{pad}    raise SystemExit(f"error: a global batch of {shown} does not divide by '
        f'{{world_size}} processes")\n'
    )


def commented(comma, comment):
    """A comma that ends its line (`arg,  # ...`), with the item's comment after it (after the line's own)."""
    ws = comma.whitespace_after
    if not isinstance(ws, cst.ParenthesizedWhitespace):
        return comma
    old = ws.first_line.comment
    note = f"{old.value}; {comment}" if old else f"# {comment}"
    first = ws.first_line.with_changes(
        whitespace=cst.SimpleWhitespace("  "), comment=cst.Comment(note)
    )
    return comma.with_changes(whitespace_after=ws.with_changes(first_line=first))


def with_sampler(args, closing):
    """The call's arguments and `sampler=sampler`, which takes the closing argument's comma and line break."""
    return [
        *args,
        cst.Arg(
            keyword=cst.Name("sampler"),
            value=cst.Name("sampler"),
            equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
            comma=closing.comma,
            whitespace_after_arg=closing.whitespace_after_arg,
        ),
    ]


def loader_from_call(mig, loader, statement, seed, accelerate, used, params=None):
    """`DataLoader(ds, batch_size=B, shuffle=S)`: the batch divided, the sampler given S; the lines that go
    before the loader are returned."""
    batch = batch_arg(loader, params)
    if batch is None:
        raise Refused(
            f"line {mig.line(loader)}: the training DataLoader has no batch_size: nothing to divide"
        )
    data = dataset_arg(loader)
    hoisted = ""
    if isinstance(data.value, cst.Name):
        dataset = data.value.value
    else:  # vae/main.py builds its dataset in the call: named first, so the sampler can take it
        dataset = fresh_name("train_dataset", used)
        hoisted = hoist(mig, data.value, dataset, statement)
    shuffle = keyword(loader, "shuffle")
    options = []
    if shuffle is None:
        options.append("shuffle=False")  # the plain loader read the dataset in order
    elif not (isinstance(shuffle.value, cst.Name) and shuffle.value.value == "True"):
        options.append(f"shuffle={mig.code(shuffle.value)}")
    # data.loader(..., seed=): the order the plain loader shuffled in
    given = keyword(loader, "seed")
    options += [f"seed={mig.code(given.value) if given else seed}", "drop_last=True"]
    pad = mig.indent(statement)
    b = mig.code(batch.value)
    if not isinstance(batch.value, cst.Name | cst.Attribute | cst.Integer):
        b = f"({b})"
    shown = "{" + b + "}" if '"' not in b and "{" not in b else "the batch size"
    args = []
    for a in loader.args:
        if a is shuffle and not accelerate:
            continue
        if a is batch:
            a = a.with_changes(value=cst.parse_expression(f"{b} // world_size"))
        if a is data and hoisted:
            a = a.with_changes(value=cst.Name(dataset))
        args.append(a)
    multiline = (
        len(loader.args) > 1
        and isinstance(loader.args[-1].comma, cst.Comma)
        and isinstance(loader.args[-2].comma, cst.Comma)
        and isinstance(loader.args[-1].comma.whitespace_after, cst.ParenthesizedWhitespace)
        and args[-1].star != "**"
    )
    why = f"per process: the global batch unchanged: {GUIDE} item 4"
    if multiline:  # one argument a line: each changed line carries its comment
        at = next(
            i
            for i, a in enumerate(args)
            if a.value.deep_equals(cst.parse_expression(f"{b} // world_size"))
        )
        args[at] = args[at].with_changes(comma=commented(args[at].comma, why))
    if not accelerate and multiline:  # sampler= on a line of its own, last
        args[-1] = args[-1].with_changes(
            comma=loader.args[-2].comma if at != len(args) - 1 else args[-1].comma
        )
        args = with_sampler(args, loader.args[-1])
        args[-1] = args[-1].with_changes(
            comma=commented(args[-1].comma, f"instead of shuffle: {GUIDE} item 4")
        )
    elif not accelerate:  # prepare() shards the loader itself, shuffling or not
        space = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        tail = [args.pop()] if args[-1].star == "**" else []  # sampler= goes before a **dict
        args[-1] = args[-1].with_changes(comma=space, whitespace_after_arg=cst.SimpleWhitespace(""))
        if tail:
            args = [*with_sampler(args, args[-1]), *tail]
            args[-2] = args[-2].with_changes(
                comma=space, whitespace_after_arg=cst.SimpleWhitespace("")
            )
        else:
            args = with_sampler(args, loader.args[-1])
    changed = statement.with_changes(
        body=[statement.body[0].with_changes(value=loader.with_changes(args=args))]
    )
    mig.replace(statement, mig.render(changed, None if multiline else why, pad))
    if accelerate:
        return hoisted + split_check(pad, b, shown)
    return (
        hoisted
        + split_check(pad, b, shown)
        + (
            f"{pad}sampler = DistributedSampler({dataset}, {', '.join(options)})  # instead of shuffle: "
            f"{GUIDE} item 4\n"
        )
    )


def global_batch(mig, loader, params, loaders):
    """MIG208: the batch size's name read anywhere else than in a DataLoader's call (`range(batch_size)` over a
    batch's labels, `init_hidden(args.batch_size)`, `batch_size = args.batch_size * accum`): it still holds the
    global batch, while each process's training batches now hold batch // world size. Right where it means the
    global batch (a samples count), wrong where it stands for the size of the batch in hand: the reader decides."""
    batch = batch_arg(loader, params)
    if batch is None or not isinstance(batch.value, cst.Name | cst.Attribute):
        return
    name = dotted(batch.value)
    inside = {id(n) for c in loaders for n in m.findall(c, m.Name() | m.Attribute())}
    targets = {
        id(n) for t in m.findall(mig.module, m.AssignTarget()) for n in m.findall(t, m.Name())
    }
    attributes = {id(a.attr) for a in m.findall(mig.module, m.Attribute())}
    reads = sorted(
        {
            mig.line(n)
            for n in m.findall(mig.module, m.Name() | m.Attribute())
            if dotted(n) == name
            and id(n) not in inside | targets | attributes
            and not (isinstance(n, cst.Name) and "." in name)
        }
    )
    if reads:
        lines = ", ".join(str(r) for r in reads)
        mig.finding(
            batch.value,
            "MIG208",
            f"{name} is read on line{'s' if len(reads) > 1 else ''} {lines} too: it still holds the global "
            f"batch, while each process's training batches now hold {name} // world_size; right where it "
            f"counts samples, wrong where it stands for the batch in hand (`range({name})` over a batch's "
            f"labels: an IndexError) ({GUIDE} item 4)",
        )


def loader_from_dict(mig, loader, statement, loaders, seed, accelerate):
    """`DataLoader(ds, **train_kwargs)`, as mnist/main.py builds it (the dict filled in branches): the dict is
    read when the script runs, so whatever branch filled it, its batch is divided and its shuffle goes to the
    sampler."""
    (options,) = [a for a in loader.args if a.star == "**"]
    name = options.value.value
    if keyword(loader, "batch_size") or keyword(loader, "shuffle") or len(loader.args) > 2:
        raise Refused(
            f"line {mig.line(loader)}: the training DataLoader takes options both from its call and "
            f"from **{name}: not rewritten"
        )
    shared = [c for c in loaders if c is not loader and f"**{name}" in mig.code(c).replace(" ", "")]
    if shared:
        raise Refused(
            f"line {mig.line(shared[0])}: another DataLoader reads **{name} too: dividing its batch "
            f"would divide both"
        )
    pad = mig.indent(statement)
    b = f'{name}.get("batch_size", 1)'
    text = split_check(pad, b, "{" + b.replace('"', "'") + "}")
    text += (
        f'{pad}{name}["batch_size"] = {b} // world_size  # per process: the global batch unchanged: '
        f"{GUIDE} item 4\n"
    )
    if accelerate:
        return text
    dataset = mig.code(loader.args[0].value)
    text += (
        f'{pad}sampler = DistributedSampler({dataset}, shuffle={name}.pop("shuffle", False), '
        f"seed={seed}, drop_last=True)  # instead of shuffle: {GUIDE} item 4\n"
    )
    space = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    first = loader.args[0].with_changes(comma=space)
    sampler = with_sampler([], first)[0].with_changes(comma=space)
    changed = statement.with_changes(
        body=[
            statement.body[0].with_changes(
                value=loader.with_changes(args=[first, sampler, options])
            )
        ]
    )
    mig.replace(statement, mig.render(changed, f"the sampler: {GUIDE} item 4", pad))
    return text


def accelerator_print(mig, statement):
    """`print(...)` -> `accelerator.print(...)`: the main process prints."""
    why = f"the main process prints: {GUIDE} item C"
    if (
        mig.line(statement) in mig.replaced
    ):  # a test function's print, already given the whole set's size
        text, pad = mig.current(statement), mig.indent(statement)
        lines = text.splitlines(keepends=True)
        lines[0] = pad + "accelerator." + lines[0][len(pad) :]
        lines[-1] = (
            lines[-1].rstrip("\n") + f"; {why}\n"
        )  # after the comment the first change wrote
        mig.replace(statement, "".join(lines))
        return
    call = statement.body[0].value
    func = cst.parse_expression("accelerator.print")
    changed = statement.with_changes(
        body=[statement.body[0].with_changes(value=call.with_changes(func=func))]
    )
    mig.replace(statement, mig.render(changed, why, mig.indent(statement)))


def add_parameter(mig, function, main):
    """`accelerator` as the last parameter of a function main() calls, and as the last argument of each call."""
    name = function.name.value
    params = function.params
    if params.star_arg != cst.MaybeSentinel.DEFAULT or params.kwonly_params or params.star_kwarg:
        raise Refused(
            f"{name}() takes *args, keyword-only or **kwargs: the Accelerator is not passed in"
        )
    if not params.params or params.params[-1].default or params.params[-1].annotation:
        raise Refused(f"{name}()'s last parameter has a default or an annotation: not rewritten")
    end = mig.pos[params.params[-1].name].end
    text = mig.lines[end.line - 1]
    text = text[: end.column] + ", accelerator" + text[end.column :]
    if "#" not in text:
        text = text.rstrip("\n") + f"  # {GUIDE} item A\n"
    mig.replaced[end.line] = (end.line, text)
    for statement in enclosing_statements(main):
        calls = [c for c in m.findall(statement, m.Call()) if dotted(c.func) == name]
        if not calls:
            continue
        if mig.line(statement) in mig.replaced or len(calls) != 1 or calls[0].args[-1].keyword:
            raise Refused(
                f"line {mig.line(statement)}: a call of {name}() not rewritten with certainty"
            )
        call = calls[0]
        last = call.args[-1].with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
        new = call.with_changes(args=[*call.args[:-1], last, cst.Arg(cst.Name("accelerator"))])
        changed = statement.deep_replace(call, new)
        mig.replace(statement, mig.render(changed, f"{GUIDE} item A", mig.indent(statement)))


class WholeSize(cst.CSTTransformer):
    """`len(<loader>.dataset)` -> `test_size`: the loader now reads a shard; the sums cover the whole set."""

    def __init__(self, loader):
        super().__init__()
        self.loader = loader
        self.count = 0

    def leave_Call(self, original, updated):
        if (
            dotted(updated.func) == "len"
            and len(updated.args) == 1
            and dotted(updated.args[0].value) == f"{self.loader}.dataset"
        ):
            self.count += 1
            return cst.Name("test_size")
        return updated


def migrate_test(mig, function, loader, accelerate):
    """A test function of the mnist shape: sums in a `with torch.no_grad():` loop over the loader (a parameter,
    or the module's global), then a division by `len(loader.dataset)`. The sums are all-reduced after the loop;
    the whole set's size replaces the shard's. A loss of per-batch means divided by the number of batches (the
    quickstart's `test_loss /= num_batches`) becomes a sum of per-sample losses divided by the whole set's
    size: the plain script's number when its batches are equal (item 7)."""
    name = function.name.value
    used = names_in(function)
    if used & ADDED_IN_TEST:
        raise Refused(
            f"{name}() already uses {', '.join(sorted(used & ADDED_IN_TEST))}: rename first"
        )
    if "device" not in used:
        raise Refused(f"{name}() reads no device: the all-reduce needs this process's device")
    body = statements_of(function)
    withs = [
        s
        for s in body
        if isinstance(s, cst.With)
        and any(
            dotted(i.item.func) == "torch.no_grad" for i in s.items if isinstance(i.item, cst.Call)
        )
    ]
    if len(withs) != 1:
        raise Refused(
            f"{name}() has no single `with torch.no_grad():` block: not recognised as a test loop"
        )
    block = withs[0]
    fors = [
        s
        for s in m.findall(block, m.For())
        if dotted(s.iter) == loader
        or isinstance(s.iter, cst.Call)
        and dotted(s.iter.func) == "enumerate"
        and s.iter.args
        and dotted(s.iter.args[0].value) == loader
    ]
    if len(fors) != 1:
        raise Refused(f"{name}() does not loop over {loader} in its no_grad block: not recognised")
    sums, adds = [], {}
    for aug in m.findall(fors[0], m.AugAssign()):
        if isinstance(aug.operator, cst.AddAssign) and isinstance(aug.target, cst.Name):
            if aug.target.value not in [n for n, _ in sums]:
                counted = mig.code(aug.value)
                sums.append((aug.target.value, ".eq(" in counted or "==" in counted))
                adds[aug.target.value] = aug
    if not sums:
        raise Refused(
            f"{name}() sums nothing in its loop (`x += ...`): not recognised as a test loop"
        )
    # len(loader.dataset) and len(loader) named before the loop (the quickstart's size and num_batches)
    at = body.index(block)
    aliases = {}
    for statement in body[:at]:
        found = assignment(statement)
        if found and isinstance(found[1], cst.Call) and dotted(found[1].func) == "len":
            of = dotted(found[1].args[0].value) if found[1].args else ""
            if of in (loader, f"{loader}.dataset"):
                aliases[found[0]] = "batches" if of == loader else "dataset"
    means = {}  # a sum of per-batch means -> the statement dividing it by the number of batches
    for aug in m.findall(function, m.AugAssign()):
        if not isinstance(aug.operator, cst.DivideAssign):
            continue
        value = aug.value
        batches = (
            isinstance(value, cst.Call)
            and dotted(value.func) == "len"
            and dotted(value.args[0].value) == loader
        ) or (isinstance(value, cst.Name) and aliases.get(value.value) == "batches")
        if not batches:
            continue
        target = dotted(aug.target)
        added = adds.get(target)
        if added is None or "reduction" in mig.code(added.value):
            raise Refused(
                f"line {mig.line(aug)}: {name}() divides {target} by the number of batches, but "
                f"{target} is not a sum of the criterion's per-batch means in the loop: not recognised "
                f"({GUIDE} item 7)"
            )
        means[target] = aug
    for target, aug in adds.items():
        if target not in means and per_batch_mean(mig, aug.value):
            mig.finding(
                aug,
                "MIG204",
                f"{target} adds up per-batch means (a criterion without reduction='sum') and is divided "
                f"by the set's size: its value depends on how many batches there are, so at N processes "
                f"it is about N times the plain one; left as it is: add the batch's mean times its size "
                f"({GUIDE} item 7)",
            )
    loop_target = fors[0].target
    if isinstance(loop_target, cst.Tuple) and isinstance(loop_target.elements[-1].value, cst.Tuple):
        loop_target = loop_target.elements[-1].value  # for i, (data, _) in enumerate(loader)
    first = (
        loop_target.elements[0].value
        if isinstance(loop_target, cst.Tuple) and loop_target.elements
        else None
    )
    for target, divide in means.items():
        if not isinstance(first, cst.Name):
            raise Refused(
                f"line {mig.line(divide)}: a mean of per-batch means, and no batch to count in "
                f"{name}()'s loop target: not recognised ({GUIDE} item 7)"
            )
        added = adds[target]
        statement = next(
            s for s in enclosing_statements(fors[0]) if added in m.findall(s, m.AugAssign())
        )
        value = added.value
        if not isinstance(value, cst.Call | cst.Attribute | cst.Name | cst.Subscript):
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        times = cst.BinaryOperation(
            value, cst.Multiply(), cst.parse_expression(f"len({first.value})")
        )
        changed = statement.deep_replace(added, added.with_changes(value=times))
        why = f"a batch's mean times its size: a sum: {GUIDE} item 7"
        mig.replace(statement, mig.render(changed, why, mig.indent(statement)))
        owner = next(
            s for s in enclosing_statements(function) if divide in m.findall(s, m.AugAssign())
        )
        changed = owner.deep_replace(divide, divide.with_changes(value=cst.Name("test_size")))
        why = f"the whole set's mean (not a mean of batch means): {GUIDE} item 7"
        mig.replace(owner, mig.render(changed, why, mig.indent(owner)))
    pad = mig.indent(block)
    names = ", ".join(n for n, _ in sums)
    back = ", ".join(
        f"int(totals[{i}].item())" if whole else f"totals[{i}].item()"
        for i, (_, whole) in enumerate(sums)
    )
    after = body[at + 1 :]
    renamed = "".join(
        f"{pad}{alias} = test_size  # the whole set's size, not the shard's: {GUIDE} item 7\n"
        for alias, kind in aliases.items()
        if kind == "dataset"
    )
    mig.insert(
        mig.line(after[0]) if after else mig.last_line(block) + 1,  # after the blank lines, if any
        f"{pad}totals = [{names}, len({loader}.dataset)]  # this shard's sums: {GUIDE} item 7\n"
        f"{pad}totals = torch.tensor(totals, dtype=torch.float64, device=device)  # {GUIDE} item 7\n"
        + (
            f'{pad}totals = accelerator.reduce(totals, reduction="sum")  # every shard: {GUIDE} item 7\n'
            if accelerate
            else f"{pad}dist.all_reduce(totals)  # every process, every shard: {GUIDE} item 7\n"
        )
        + f"{pad}{names} = {back}  # every shard's sums: {GUIDE} item 7\n"
        f"{pad}test_size = int(totals[{len(sums)}].item())  # the whole set's size: {GUIDE} item 7\n"
        + renamed,
    )
    for statement in after:
        for simple in (
            enclosing_statements(statement)
            if not isinstance(statement, cst.SimpleStatementLine)
            else [statement]
        ):
            fixer = WholeSize(loader)
            changed = simple.visit(fixer)
            if fixer.count:
                if mig.line(simple) in mig.replaced:
                    raise Refused(
                        f"line {mig.line(simple)}: len({loader}.dataset) on a line changed already: "
                        f"not rewritten with certainty"
                    )
                mig.replace(
                    simple,
                    mig.render(
                        changed, f"the whole set's size: {GUIDE} item 7", mig.indent(simple)
                    ),
                )


def per_batch_mean(mig, value):
    """A loss called with its default reduction, the batch's mean: a criterion object (`criterion =
    nn.BCELoss()`) or a functional loss (`F.nll_loss(output, target)`) without `reduction=`."""
    criteria = set()
    for assign in m.findall(mig.module, m.Assign()):
        call = assign.value
        if (
            isinstance(call, cst.Call)
            and last_name(call.func).endswith("Loss")
            and not keyword(call, "reduction")
            and all(isinstance(t.target, cst.Name) for t in assign.targets)
        ):
            criteria |= {t.target.value for t in assign.targets}
    for call in m.findall(value, m.Call()):
        name = last_name(call.func)
        functional = dotted(call.func).startswith(("F.", "torch.nn.functional.")) and "loss" in name
        if (name in criteria or functional) and not keyword(call, "reduction"):
            return True
    return False


def randomness(mig, functions):
    """Findings, not refusals: randomness drawn per sample or per forward from the process's own generator."""
    for cls in m.findall(mig.module, m.ClassDef()):
        methods = {f.name.value for f in m.findall(cls, m.FunctionDef())}
        for method in m.findall(cls, m.FunctionDef()):
            # a model's methods other than __init__ run in forward (vae's reparameterize)
            if method.name.value not in ("__getitem__", "forward", "__iter__") and (
                "forward" not in methods or method.name.value == "__init__"
            ):
                continue
            for call in m.findall(method, m.Call()):
                name = dotted(call.func)
                parts = name.split(".")
                drawn = (
                    parts[0] == "random"
                    or name.startswith(("np.random.", "numpy.random."))
                    or (parts[0] == "torch" and parts[-1] in RANDOM_CALLS)
                )
                if drawn and not keyword(call, "generator"):
                    mig.finding(
                        call,
                        "MIG201",
                        f"{name}() in {cls.name.value}.{method.name.value}() draws from each process's "
                        f"own generator: the migration trains, but no run at another world size draws "
                        f"what the plain run draws, so no proof holds; draw from a generator seeded by the "
                        f"sample ({GUIDE} item 20)",
                    )
    for call in calls_named(mig.module, "random_split"):
        if not keyword(call, "generator"):
            mig.finding(
                call,
                "MIG202",
                f"random_split() without a seeded generator splits differently in every process: pass "
                f"generator=torch.Generator().manual_seed(seed) ({GUIDE} item 4)",
            )


# --prove ----------------------------------------------------------------------------------------------------
WEIGHT_FILES = (".safetensors", ".pt", ".pth", ".bin")


def proof_obstacles(source, findings):
    """Why no run at two processes can end on the plain run's weights, whatever the flags: randomness drawn
    per sample or per forward (MIG201), BatchNorm on a CPU (MIG203), dropout with a literal nonzero p (each
    process draws its own masks: a flag that sets p, as `--dropout 0`, leaves it to the proof's flags), no
    torch.manual_seed (the initial weights differ from run to run)."""
    why = []
    if any(" MIG201 " in f for f in findings):
        why.append(
            f"randomness drawn from each process's own generator (MIG201 above; {GUIDE} item 20)"
        )
    if any(" MIG203 " in f for f in findings):
        why.append(
            "BatchNorm: per-process statistics on a CPU, where SyncBatchNorm refuses to run (MIG203 "
            f"above; {GUIDE} item 19 says how to prove it frozen)"
        )
    wrapper = MetadataWrapper(cst.parse_module(source))
    module, lines = wrapper.module, wrapper.resolve(PositionProvider)
    for call in m.findall(module, m.Call()):
        if last_name(call.func) not in DROPOUTS:
            continue
        p = keyword(call, "p")
        positional = [a for a in call.args if not a.keyword and not a.star]
        index = 0 if last_name(call.func)[0].isupper() else 1  # nn.Dropout(p), F.dropout(x, p)
        if p is None and len(positional) > index:
            p = positional[index]
        value = p.value if p else cst.Float("0.5")  # the default
        if isinstance(value, cst.Float | cst.Integer) and float(value.value) != 0:
            why.append(
                f"dropout with p={value.value} written in the code (line {lines[call].start.line}): "
                f"each process draws its own masks; a copy with p=0, or p from a flag, proves "
                f"({GUIDE} item 20)"
            )
            break
    if not [c for c in calls_named(module, "manual_seed") if dotted(c.func) == "torch.manual_seed"]:
        why.append(
            f"no torch.manual_seed: the initial weights differ from run to run ({GUIDE} item 3)"
        )
    return why


def flags_of(module):
    """argparse's options in the file: dest -> (option string, takes a value)."""
    found = {}
    for call in calls_named(module, "add_argument"):
        options = [
            a.value.evaluated_value
            for a in call.args
            if not a.keyword and isinstance(a.value, cst.SimpleString)
        ]
        longs = [o for o in options if o.startswith("--")] or [
            o for o in options if o.startswith("-")
        ]
        if not longs:
            continue
        dest = keyword(call, "dest")
        dest = dest.value.evaluated_value if dest else longs[0].lstrip("-").replace("-", "_")
        action = keyword(call, "action")
        switch = action and action.value.evaluated_value in ("store_true", "store_false")
        found[dest] = (longs[0], not switch)
    return found


def save_plan(source, path):
    """How a run of the script is made to save its weights: (extra flags, file) with `{out}` standing for the
    run's own directory. The save path's flag is given a file there; a literal path is relative to the run's
    directory; a flag guarding the save (`if args.save_model:`) is switched on."""
    module = cst.parse_module(source)
    flags = flags_of(module)
    for file in project_files(path, module):  # rung 1's flags live in common/flags.py
        try:
            flags = {**flags_of(cst.parse_module(file.read_text())), **flags}
        except (OSError, UnicodeDecodeError, cst.ParserSyntaxError):
            continue
    saves = [c for c in m.findall(module, m.Call()) if dotted(c.func) == "torch.save"]
    weights = [
        c
        for c in m.findall(module, m.Call())
        if is_write(c)
        and c.args
        and any(
            isinstance(t, cst.SimpleString) and t.evaluated_value.endswith(WEIGHT_FILES)
            for t in m.findall(c.args[0].value, m.SimpleString())
        )
    ]
    if (
        not saves and len(weights) == 1
    ):  # checkpoint.save_model(Path(args.output_dir) / "model.safetensors")
        named = [
            a
            for a in m.findall(weights[0].args[0].value, m.Attribute(value=m.Name("args")))
            if a.attr.value in flags and flags[a.attr.value][1]
        ]
        literal = m.findall(weights[0].args[0].value, m.SimpleString())[-1].evaluated_value
        if len(named) == 1 and literal.endswith(WEIGHT_FILES):
            option = flags[named[0].attr.value][0]
            return [option, "{out}/run"], "{out}/run/" + literal
    if len(saves) != 1 or len(saves[0].args) < 2:
        raise Refused(
            f"{path} saves its weights {len(saves)} times: --prove needs exactly one torch.save, or "
            f"one save of a .safetensors/.pt file under a directory flag"
        )
    target = saves[0].args[1].value
    if isinstance(target, cst.Name):  # cifar10's `PATH = './cifar_net.pth'`, bound once to a string
        bound = [
            a.value
            for a in m.findall(module, m.Assign())
            if [dotted(t.target) for t in a.targets] == [target.value]
        ]
        if len(bound) == 1 and isinstance(bound[0], cst.SimpleString):
            target = bound[0]
    extra, file = [], None
    if isinstance(target, cst.SimpleString):
        file = "{out}/" + target.evaluated_value
    elif isinstance(target, cst.Attribute) and dotted(target.value) == "args":
        option = flags.get(target.attr.value)
        if not option or not option[1]:
            raise Refused(
                f"--prove cannot tell which flag sets the save path args.{target.attr.value}"
            )
        extra, file = [option[0], "{out}/weights.pt"], "{out}/weights.pt"
    else:
        raise Refused(
            f"--prove cannot tell where the script saves ({cst.Module([]).code_for_node(target)}): pass "
            f"the path as a string or as an argparse flag"
        )
    for guard in m.findall(module, m.If()):
        if saves[0] in m.findall(guard.body, m.Call()) and isinstance(guard.test, cst.Attribute):
            option = flags.get(guard.test.attr.value)
            if dotted(guard.test.value) == "args" and option and not option[1]:
                extra.append(option[0])
    return extra, file


def prove(script, migrated, flags, nproc, tolerance, accelerate):
    source = script.read_text()
    extra, file = save_plan(source, script)
    work = Path(tempfile.mkdtemp(prefix="migrate-prove-"))
    # the script's folder first (its own modules), then whatever the caller's PYTHONPATH holds
    path = os.pathsep.join(
        p for p in (str(script.parent.resolve()), os.environ.get("PYTHONPATH")) if p
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path}
    launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}"]
    if (
        accelerate
    ):  # the project's CPU config; Accelerator(cpu=...) in the script makes the ranks real
        config = Path(__file__).resolve().parents[2] / "accelerate_configs" / "cpu_2proc.yaml"
        launcher = ["-m", "accelerate.commands.launch", "--config_file", str(config)]
        launcher += ["--num_processes", str(nproc)]
    runs = {
        "plain": [sys.executable, str(script.resolve())],
        f"{nproc} processes": [sys.executable, *launcher, str(migrated.resolve())],
    }
    # both at once: the runs share nothing but the CPU, and the proof's wall time is the longer run's
    started, running = time.perf_counter(), []
    for i, (label, command) in enumerate(runs.items()):
        out = work / ("plain" if i == 0 else "migrated")
        out.mkdir()
        more = [f.replace("{out}", str(out)) for f in extra]
        with open(out / "stdout.txt", "w") as stdout, open(out / "stderr.txt", "w") as stderr:
            process = subprocess.Popen(
                [*command, *flags, *more], cwd=out, env=env, stdout=stdout, stderr=stderr
            )
        running.append((label, command, out, more, process))
    ended = {}
    for label, *_, process in running:
        process.wait()
        ended[label] = time.perf_counter() - started
    files = []
    for i, (label, command, out, more, process) in enumerate(running):
        weights = Path(file.replace("{out}", str(out)))
        if process.returncode != 0 or not weights.exists():
            errors = (out / "stderr.txt").read_text(errors="replace").strip().splitlines()
            why = f"exit {process.returncode}" if process.returncode else f"no weights at {weights}"
            print(
                f"error: the {label} run failed ({why}): {(errors or ['(no output)'])[-1]}",
                file=sys.stderr,
            )
            return 2
        shown = ["python"] if i == 0 else ["accelerate launch" if accelerate else "torchrun"]
        shown += command[3:-1] if i and accelerate else command[3:5] if i else []
        print(
            f"{label}: {' '.join([*shown, *command[-1:], *flags, *more])}  ({ended[label]:.1f} s)"
        )
        files.append(str(weights))
    compare = Path(__file__).with_name("compare.py")
    done = subprocess.run(
        [sys.executable, str(compare), *files, "--tolerance", str(tolerance)],
        capture_output=True,
        text=True,
    )
    print(done.stdout + done.stderr, end="")
    return done.returncode


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    flags = []
    if "--" in argv:
        at = argv.index("--")
        argv, flags = argv[:at], argv[at + 1 :]
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("script", help="the plain single-process training script")
    p.add_argument("--to", choices=["torchrun", "accelerate"], required=True, help="the launcher")
    p.add_argument(
        "-o", "--output", help="where the migrated script goes (default: standard output)"
    )
    p.add_argument(
        "--prove",
        action="store_true",
        help="run the plain script and the migration (flags after --) and compare their weights",
    )
    p.add_argument("--nproc", type=int, default=2, help="processes for --prove (default 2)")
    p.add_argument("--tolerance", type=float, default=1e-5, help="for --prove (default 1e-5)")
    args = p.parse_args(argv)
    script = Path(args.script)
    try:
        try:
            source = script.read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise Refused(f"cannot read {script}: {e}") from None
        code, findings = rewrite(source, str(script), accelerate=args.to == "accelerate")
        obstacles = proof_obstacles(source, findings) if args.prove else []
        if args.prove and not obstacles:
            save_plan(source, script)  # refused before anything is written
    except Refused as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # a shape nobody foresaw: one line, never a traceback
        print(
            f"error: {script}: not migrated, a shape this first cut did not foresee "
            f"({type(e).__name__}: {e})",
            file=sys.stderr,
        )
        return 2
    output = Path(args.output) if args.output else None
    if output is None and args.prove:
        output = Path(tempfile.mkdtemp(prefix="migrate-")) / script.name
    if output is not None:
        output.write_text(code)
    else:
        sys.stdout.write(code)
    for finding in findings:
        print(finding, file=sys.stdout if output else sys.stderr)
    if args.prove and obstacles:
        print(f"migrated: {output}")
        print(
            f"proof: impossible here: {'; '.join(obstacles)}. Migration written, not proven; "
            f"nothing was run"
        )
        return 2
    if args.prove:
        print(f"migrated: {output}")
        try:
            accelerate = args.to == "accelerate"
            return prove(script, output, flags, args.nproc, args.tolerance, accelerate)
        except Refused as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
