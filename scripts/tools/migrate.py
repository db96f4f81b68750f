"""Migrate a plain single-process training script to DDP under torchrun, or to Accelerate, and prove that it
trains the same model.

    python scripts/tools/migrate.py train.py --to torchrun -o train_ddp.py
    python scripts/tools/migrate.py train.py --to accelerate -o train_accelerate.py
    python scripts/tools/migrate.py train.py --to torchrun --prove -- --epochs 1 --dropout 0

A first cut (issue 36): it rewrites scripts of the pytorch/examples mnist/main.py shape and refuses the rest.
The rewrite is made on libcst's concrete syntax tree, line by line: every line it does not change is copied byte
for byte (comments, blank lines, quotes), and every line it inserts or changes ends with a comment naming the
item of guides/your-script.md it applies. The shape it knows: a main() that builds the DataLoaders (the training
one with `shuffle=` and `batch_size=`), `device = torch.device(...)`, a model `... .to(device)` whose
`.parameters()` an optimizer takes, an epoch loop `for epoch in ...:` calling a train function (the one with
`.backward()`) and test functions that sum over a `with torch.no_grad():` loop, and
`torch.save(model.state_dict(), ...)`. The global batch stays what the plain script's flag says: each of the
processes takes batch // world size (and the script stops with one line when it does not divide).

It refuses, with one `error:` line naming the shape and exit code 2, what it cannot rewrite with certainty: no
DataLoader in the file, loader options from a dict (`**kwargs`), a training loop it does not recognise,
BatchNorm, a summed loss built outside the train function, a test loss made of per-batch means, a script that
is distributed already. Randomness drawn per sample from a process's own generator (in `__getitem__` or
`forward`) is migrated and reported as a finding (`path:line:col: MIG201 ...`, exit code 1): it trains, but no
run with more processes draws what the plain run draws.

--to accelerate writes `Accelerator(cpu=not torch.cuda.is_available())`, `prepare` (model, optimizer, training
loader), `accelerator.backward`, `accelerator.reduce` of the test sums, `accelerator.print`, a main-process save
of `unwrap_model(model)` and `end_training()`; the train and test functions take the Accelerator as a new last
parameter.

--prove runs the plain script in one process and the migration under `torchrun --standalone --nproc_per_node=2`
(`accelerate launch` with accelerate_configs/cpu_2proc.yaml for --to accelerate; gloo on a CPU) with the flags
after `--`, each saving its weights where the tool says (the save path's flag is
set for each run, or each runs in its own directory), then prints compare.py's report and exits with its code.
Turn off in the flags what draws randomness differently in one process and in two (dropout, shuffling): compare's
verdict names it otherwise. guides/migrate.md shows a worked run.
"""

import argparse
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


def is_sum(arg):
    return isinstance(arg.value, cst.SimpleString) and arg.value.evaluated_value == "sum"


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
        """A statement, changed, on its own lines, with the item's comment on its last line."""
        old = statement.trailing_whitespace.comment
        note = f"{old.value}; {comment}" if old else f"# {comment}"
        statement = statement.with_changes(
            leading_lines=[],
            trailing_whitespace=cst.TrailingWhitespace(
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
    return bool(
        found
        and found[0] == "device"
        and (
            branch
            or isinstance(found[1], cst.Call)
            and dotted(found[1].func) in ("torch.device", "torch.accelerator.current_accelerator")
        )
    )


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
    for node in m.findall(module, m.Name() | m.Attribute()):
        name = dotted(node) if isinstance(node, cst.Attribute) else node.value
        if "BatchNorm" in name.rsplit(".", 1)[-1]:
            raise Refused(
                f"line {mig.line(node)}: the model has BatchNorm ({name}): under DDP each process "
                f"normalizes its own share, so the training changes and no proof holds on a CPU; convert "
                f"with nn.SyncBatchNorm.convert_sync_batchnorm (GPUs), or prove with BatchNorm frozen "
                f"({GUIDE} item 19): not migrated automatically"
            )
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
    loaders = calls_named(module, "DataLoader")
    if not loaders:
        raise Refused(
            "no DataLoader is built in this file (a loader from another module, or batches indexed by "
            f"hand as in word_language_model): shard the data by hand ({GUIDE} items 4 and 15)"
        )
    for call in loaders:
        if any(a.star == "*" or (a.star and not isinstance(a.value, cst.Name)) for a in call.args):
            raise Refused(
                f"line {mig.line(call)}: the DataLoader takes its arguments from *args or from an "
                f"expression: pass them as keywords in the call, or **a_dict ({GUIDE} item 4)"
            )
    homes = [
        name
        for name, f in functions.items()
        if any(c in loaders for c in calls_named(f, "DataLoader"))
    ]
    if len(homes) != 1:
        raise Refused(
            "the DataLoaders are not all built in one top-level function (a main()): this first cut "
            "rewrites that shape only"
        )
    main = functions[homes[0]]
    body = statements_of(main)
    built = {}  # loader name -> its statement
    for statement in body:
        found = assignment(statement)
        if found and isinstance(found[1], cst.Call) and found[1] in loaders:
            built[found[0]] = statement
    if len(built) != len(loaders):
        raise Refused(
            f"a DataLoader in {main.name.value}() is not assigned to a name on a line of its own "
            f"(`loader = DataLoader(...)` at the function's top level): not rewritten"
        )

    # the training loop ----------------------------------------------------------------------------------------
    if calls_named(main, "backward"):
        raise Refused(
            f"{main.name.value}() calls backward() itself: a custom training loop this first cut does not "
            f"recognise (it rewrites an epoch loop calling a train function, as mnist/main.py has)"
        )
    trainers = {n for n, f in functions.items() if calls_named(f, "backward")}
    loops = [
        s
        for s in body
        if isinstance(s, cst.For)
        and any(dotted(c.func) in trainers for c in m.findall(s, m.Call()))
    ]
    if len(loops) != 1 or not isinstance(loops[0].target, cst.Name):
        raise Refused(
            f"no single epoch loop `for epoch in ...:` in {main.name.value}() calling a train function "
            f"(one with .backward()): a custom training loop this first cut does not recognise"
        )
    loop = loops[0]
    train_calls = [c for c in m.findall(loop, m.Call()) if dotted(c.func) in trainers]
    if len(train_calls) != 1:
        raise Refused("the epoch loop calls more than one train function: not recognised")
    train_call = train_calls[0]
    train_fn = functions[dotted(train_call.func)]
    passed = [a.value.value for a in train_call.args if isinstance(a.value, cst.Name)]
    train_names = [n for n in passed if n in built]
    if len(train_names) != 1:
        raise Refused("the train function is not passed exactly one DataLoader built in main()")
    train_name = train_names[0]
    train_stmt = built[train_name]
    train_loader = assignment(train_stmt)[1]
    if len(calls_named(train_fn, "backward")) != 1:
        raise Refused(f"{train_fn.name.value}() calls backward() more than once: not recognised")

    # the device and the model ---------------------------------------------------------------------------------
    devices = [s for s in body if sets_device(s)]
    if len(devices) != 1:
        raise Refused(
            f"no `device = torch.device(...)` line (or an if/elif/else of them) in "
            f"{main.name.value}(): the device must come from LOCAL_RANK ({GUIDE} item 2), and this "
            f"first cut replaces that statement only"
        )
    device_stmt = devices[0]
    at = body.index(device_stmt)
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
    if len(models) != 1:
        raise Refused(
            f"no single `model = ....to(device)` in {main.name.value}() whose parameters an optimizer "
            f"takes: the DDP wrap goes after it ({GUIDE} item 5)"
        )
    model, model_stmt = models[0]
    if not at < body.index(model_stmt) or not at < body.index(train_stmt):
        raise Refused("the device is set after the model or the loaders: not recognised")

    # the training DataLoader -> a DistributedSampler, batch // world size ---------------------------------------
    if keyword(train_loader, "sampler") or keyword(train_loader, "batch_sampler"):
        raise Refused(
            f"line {mig.line(train_loader)}: the training DataLoader has a sampler already"
        )
    if not train_loader.args or train_loader.args[0].keyword or train_loader.args[0].star:
        raise Refused(
            f"line {mig.line(train_loader)}: the training DataLoader has no dataset argument"
        )
    seeds = [c for c in calls_named(main, "manual_seed") if dotted(c.func) == "torch.manual_seed"]
    seed = mig.code(seeds[0].args[0].value) if seeds and seeds[0].args else "0"
    pad = mig.indent(train_stmt)
    if any(a.star == "**" for a in train_loader.args):
        sampler = loader_from_dict(mig, train_loader, train_stmt, loaders, seed, accelerate)
    else:
        sampler = loader_from_call(mig, train_loader, train_stmt, seed, accelerate)
    mig.insert(mig.line(train_stmt), sampler)
    mig.insert(
        mig.line(loop.body.body[0]),
        ""
        if accelerate
        else f"{mig.indent(loop.body.body[0])}sampler.set_epoch({loop.target.value})  # a new order every "
        f"epoch: {GUIDE} item 4\n",
    )

    # the process group, the device, the DDP wrap, the seeds ------------------------------------------------
    os_import = any(
        isinstance(s, cst.Import) and any(dotted(n.name) == "os" and not n.asname for n in s.names)
        for s in m.findall(module, m.Import())
    )
    pad = mig.indent(device_stmt)
    mig.replace(
        device_stmt,
        f"{pad}accelerator = Accelerator(cpu=not torch.cuda.is_available())  # real processes on a "
        f"CPU too: {GUIDE} item A\n"
        f"{pad}rank, world_size = accelerator.process_index, accelerator.num_processes  # {GUIDE} "
        f"item A\n"
        f"{pad}device = accelerator.device  # {GUIDE} item A\n"
        if accelerate
        else f'{pad}local_rank = int(os.environ["LOCAL_RANK"])  # torchrun sets it: {GUIDE} item 1\n'
        f"{pad}if torch.cuda.is_available():  # this process's own GPU: {GUIDE} item 2\n"
        f"{pad}    torch.cuda.set_device(local_rank)\n"
        f"{pad}dist.init_process_group()  # gloo on a CPU, NCCL on GPUs: {GUIDE} item 2\n"
        f"{pad}rank, world_size = dist.get_rank(), dist.get_world_size()  # {GUIDE} item 2\n"
        f'{pad}device = torch.device(f"cuda:{{local_rank}}" if torch.cuda.is_available() else "cpu")'
        f"  # {GUIDE} item 2\n",
    )
    pad = mig.indent(model_stmt)
    reseed = (
        f"{pad}torch.manual_seed({seed} + rank)  # from here on, each process its own dropout: "
        f"{GUIDE} item 3\n"
        if seeds
        else ""
    )
    optimizers = [
        (assignment(s)[0], s)
        for s in body
        if assignment(s)
        and any(dotted(c.func) == f"{model}.parameters" for c in m.findall(s, m.Call()))
    ]
    if accelerate and len(optimizers) != 1:
        raise Refused(
            f"no single optimizer built from {model}.parameters() on a line of its own in "
            f"{main.name.value}(): prepare() takes it ({GUIDE} item A)"
        )
    if accelerate:
        optimizer, optimizer_stmt = optimizers[0]
        after = max((model_stmt, optimizer_stmt, train_stmt), key=body.index)
        pad = mig.indent(after)
        mig.insert(
            mig.last_line(after) + 1,
            f"{pad}{model}, {optimizer}, {train_name} = accelerator.prepare({model}, {optimizer}, "
            f"{train_name})  # DDP, and the loader sharded: {GUIDE} item A\n"
            + reseed.replace(pad, mig.indent(after), 1),
        )
    else:
        mig.insert(
            mig.last_line(model_stmt) + 1,
            f"{pad}{model} = DDP({model}, device_ids=[local_rank] if torch.cuda.is_available() else None)"
            f"  # {GUIDE} item 5\n{reseed}",
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
    test_fns = {}
    for call in m.findall(main, m.Call()):
        name = dotted(call.func)
        for i, a in enumerate(call.args):
            if (
                isinstance(a.value, cst.Name)
                and a.value.value in built
                and a.value.value != train_name
            ):
                if name not in functions:
                    raise Refused(
                        f"line {mig.line(call)}: the loader {a.value.value} is passed to {name}(), "
                        f"not a function of this file: not recognised"
                    )
                test_fns.setdefault(name, (i, a.value.value))
    for a in m.findall(module, m.Arg()):
        if a.keyword and a.keyword.value == "reduction" and is_sum(a) and a not in summed:
            inside = [
                f for n, f in functions.items() if n in test_fns and a in m.findall(f, m.Arg())
            ]
            if not inside:
                where = [n for n, f in functions.items() if a in m.findall(f, m.Arg())]
                raise Refused(
                    f"line {mig.line(a)}: a summed loss (reduction='sum') in "
                    f"{where[0] + '()' if where else 'module code'}, neither the train function nor a "
                    f"test function reading a DataLoader of main(): whether it trains, and on what, "
                    f"must be read by hand ({GUIDE} items 7 and 18)"
                )
    if summed or accelerate:
        if not isinstance(backward.func, cst.Attribute) or not isinstance(
            backward.func.value, cst.Name
        ):
            raise Refused(f"line {mig.line(backward)}: backward() on an expression: not recognised")
        statement = next(
            s for s in enclosing_statements(train_fn) if backward in m.findall(s, m.Call())
        )
        loss = backward.func.value.value
        # the train function has no world_size of its own: read it from the group
        if accelerate:
            scaled = f"{loss} * accelerator.num_processes" if summed else loss
            scaled = f"accelerator.backward({scaled})\n"
        else:
            scaled = f"({loss} * dist.get_world_size()).backward()\n"
        why = f"a summed loss: DDP averages the gradients: {GUIDE} item 18"
        if accelerate:
            why = f"instead of backward(): {GUIDE} item A" + (", and item 18" if summed else "")
        scaled = cst.parse_statement(scaled).with_changes(
            trailing_whitespace=statement.trailing_whitespace
        )
        mig.replace(statement, mig.render(scaled, why, mig.indent(statement)))

    # the test functions: a shard each, the sums all-reduced ---------------------------------------------------
    for name, (index, loader_name) in test_fns.items():
        migrate_test(mig, functions[name], index, accelerate)
        statement = built[loader_name]
        call = assignment(statement)[1]
        if not call.args or call.args[0].keyword or not isinstance(call.args[0].value, cst.Name):
            raise Refused(
                f"line {mig.line(call)}: the test DataLoader's dataset is not a name: not sharded"
            )
        data = call.args[0].value.value
        shard = cst.parse_expression(f"Subset({data}, range(rank, len({data}), world_size))")
        changed = statement.with_changes(
            body=[
                statement.body[0].with_changes(
                    value=call.with_changes(
                        args=[call.args[0].with_changes(value=shard), *call.args[1:]]
                    )
                )
            ]
        )
        if mig.line(statement) not in mig.replaced:
            mig.replace(
                statement,
                mig.render(changed, f"each process a shard: {GUIDE} item 7", mig.indent(statement)),
            )

    # saving: rank 0, the bare model -------------------------------------------------------------------------
    for save in [c for c in m.findall(module, m.Call()) if dotted(c.func) == "torch.save"]:
        if save not in m.findall(main, m.Call()):
            raise Refused(
                f"line {mig.line(save)}: torch.save outside {main.name.value}(): not rewritten"
            )
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
        unwrapped = f"accelerator.unwrap_model({model})" if accelerate else f"{model}.module"
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

    # printing on rank 0 -------------------------------------------------------------------------------------
    printing = [
        s for f in [train_fn, *(functions[n] for n in test_fns)] for s in print_statements(f)
    ]
    printing += [s for s in print_statements(main) if mig.line(s) > mig.line(device_stmt)]
    count_all(mig, train_fn, "accelerator.num_processes" if accelerate else "dist.get_world_size()")
    for statement in printing:
        if accelerate:
            accelerator_print(mig, statement)
        elif statement in print_statements(main):
            mig.guard(statement, "rank == 0", f"one process prints: {GUIDE} item 8")
        else:
            mig.guard(statement, "dist.get_rank() == 0", f"one process prints: {GUIDE} item 8")
    if accelerate:  # the functions that train and test take the Accelerator
        for function in [train_fn, *(functions[n] for n in test_fns)]:
            add_parameter(mig, function, main)

    # the end of main; the imports ---------------------------------------------------------------------------
    last = body[-1]
    if isinstance(last, cst.SimpleStatementLine) and m.findall(last, m.Return()):
        raise Refused(f"{main.name.value}() ends in a return: where the group ends is not certain")
    pad = mig.indent(body[0])
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
    mig.insert(mig.last_line(imports[-1]) + 1, block)

    randomness(mig, functions)
    return mig.output(), mig.findings


class CountAll(cst.CSTTransformer):
    """`batch_idx * len(data)` -> `batch_idx * len(data) * <world size>`: every process took len(data)."""

    def __init__(self, index, batch, world_size):
        super().__init__()
        self.index, self.batch, self.world_size = index, batch, world_size
        self.count = 0

    def leave_BinaryOperation(self, original, updated):
        right = updated.right
        if (
            isinstance(updated.operator, cst.Multiply)
            and dotted(updated.left) == self.index
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
        for statement in print_statements(loop):
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


def loader_from_call(mig, loader, statement, seed, accelerate):
    """`DataLoader(ds, batch_size=B, shuffle=S)`: the batch divided, the sampler given S; the lines that go
    before the loader are returned."""
    batch = keyword(loader, "batch_size")
    if batch is None and len(loader.args) > 1 and not loader.args[1].keyword:
        batch = loader.args[1]
    if batch is None:
        raise Refused(
            f"line {mig.line(loader)}: the training DataLoader has no batch_size: nothing to divide"
        )
    dataset = mig.code(loader.args[0].value)
    shuffle = keyword(loader, "shuffle")
    options = []
    if shuffle is None:
        options.append("shuffle=False")  # the plain loader read the dataset in order
    elif not (isinstance(shuffle.value, cst.Name) and shuffle.value.value == "True"):
        options.append(f"shuffle={mig.code(shuffle.value)}")
    options += [f"seed={seed}", "drop_last=True"]
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
        args.append(a)
    if not accelerate:  # prepare() shards the loader itself, shuffling or not
        space = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        args[-1] = args[-1].with_changes(comma=space, whitespace_after_arg=cst.SimpleWhitespace(""))
        args = with_sampler(args, loader.args[-1])
    changed = statement.with_changes(
        body=[statement.body[0].with_changes(value=loader.with_changes(args=args))]
    )
    why = f"per process: the global batch unchanged: {GUIDE} item 4"
    mig.replace(statement, mig.render(changed, why, pad))
    if accelerate:
        return split_check(pad, b, shown)
    return split_check(pad, b, shown) + (
        f"{pad}sampler = DistributedSampler({dataset}, {', '.join(options)})  # instead of shuffle: "
        f"{GUIDE} item 4\n"
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


def migrate_test(mig, function, index, accelerate):
    """A test function of the mnist shape: sums in a `with torch.no_grad():` loop over the loader, then a
    division by `len(loader.dataset)`. The sums are all-reduced after the loop; the whole set's size replaces the
    shard's."""
    name = function.name.value
    params = function.params.params
    if index >= len(params):
        raise Refused(f"{name}() takes its loader by keyword or *args: not recognised")
    loader = params[index].name.value
    used = names_in(function)
    if used & ADDED_IN_TEST:
        raise Refused(
            f"{name}() already uses {', '.join(sorted(used & ADDED_IN_TEST))}: rename first"
        )
    if "device" not in {p.name.value for p in params}:
        raise Refused(
            f"{name}() takes no device argument: the all-reduce needs this process's device"
        )
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
    fors = [s for s in m.findall(block, m.For()) if dotted(s.iter) == loader]
    if len(fors) != 1:
        raise Refused(f"{name}() does not loop over {loader} in its no_grad block: not recognised")
    sums = []
    for aug in m.findall(fors[0], m.AugAssign()):
        if isinstance(aug.operator, cst.AddAssign) and isinstance(aug.target, cst.Name):
            if aug.target.value not in [n for n, _ in sums]:
                counted = mig.code(aug.value)
                sums.append((aug.target.value, ".eq(" in counted or "==" in counted))
    if not sums:
        raise Refused(
            f"{name}() sums nothing in its loop (`x += ...`): not recognised as a test loop"
        )
    for aug in m.findall(function, m.AugAssign()):
        if (
            isinstance(aug.operator, cst.DivideAssign)
            and isinstance(aug.value, cst.Call)
            and dotted(aug.value.func) == "len"
            and dotted(aug.value.args[0].value) == loader
        ):
            raise Refused(
                f"line {mig.line(aug)}: {name}() averages per-batch means (/= len({loader})): all-reducing "
                f"them is not the plain number; turn them into sums first ({GUIDE} item 7)"
            )
    pad = mig.indent(block)
    names = ", ".join(n for n, _ in sums)
    back = ", ".join(
        f"int(totals[{i}].item())" if whole else f"totals[{i}].item()"
        for i, (_, whole) in enumerate(sums)
    )
    back = back if len(sums) > 1 else back + ","
    after = body[body.index(block) + 1 :]
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
        f"{pad}test_size = int(totals[{len(sums)}].item())  # the whole set's size: {GUIDE} item 7\n",
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
                mig.replace(
                    simple,
                    mig.render(
                        changed, f"the whole set's size: {GUIDE} item 7", mig.indent(simple)
                    ),
                )


def randomness(mig, functions):
    """Findings, not refusals: randomness drawn per sample or per forward from the process's own generator."""
    for cls in m.findall(mig.module, m.ClassDef()):
        for method in m.findall(cls, m.FunctionDef()):
            if method.name.value not in ("__getitem__", "forward", "__iter__"):
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
    saves = [c for c in m.findall(module, m.Call()) if dotted(c.func) == "torch.save"]
    if len(saves) != 1 or len(saves[0].args) < 2:
        raise Refused(
            f"{path} saves its weights {len(saves)} times: --prove needs exactly one torch.save"
        )
    target = saves[0].args[1].value
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
    if "MIG201" in "".join(rewrite(source, str(script), accelerate)[1]):
        print(
            "proof: impossible here: the script draws randomness per sample from each process's own "
            f"generator (MIG201 above): fix that first ({GUIDE} item 20); migration written, not proven"
        )
        return 2
    work = Path(tempfile.mkdtemp(prefix="migrate-prove-"))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(script.parent.resolve())}
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
    files = []
    for i, (label, command) in enumerate(runs.items()):
        out = work / ("plain" if i == 0 else "migrated")
        out.mkdir()
        more = [f.replace("{out}", str(out)) for f in extra]
        started = time.perf_counter()
        done = subprocess.run(
            [*command, *flags, *more], cwd=out, env=env, capture_output=True, text=True
        )
        seconds = time.perf_counter() - started
        weights = Path(file.replace("{out}", str(out)))
        if done.returncode != 0 or not weights.exists():
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            why = f"exit {done.returncode}" if done.returncode else f"no weights at {weights}"
            print(f"error: the {label} run failed ({why}): {last}", file=sys.stderr)
            return 2
        shown = ["python"] if i == 0 else ["accelerate launch" if accelerate else "torchrun"]
        shown += command[3:-1] if i and accelerate else command[3:5] if i else []
        print(f"{label}: {' '.join([*shown, *command[-1:], *flags, *more])}  ({seconds:.1f} s)")
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
        if args.prove:
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
