"""`doctor.py --fix` and `--diff`: the mechanical rewrites, made on libcst's concrete syntax tree (as TorchFix
makes its fixes) so that every comment, blank line and quote style outside the rewritten node stays as it was.

Fixed, where doctor found them (its findings give the positions; nothing else in the file is touched):
    DDL102  torch.cuda.amp.autocast(...) / GradScaler(...)  -> torch.amp.autocast("cuda", ...) / GradScaler("cuda", ...)
            (positional arguments become keywords: the two APIs order them differently), and
            `from torch.cuda.amp import autocast, GradScaler` with its calls
    DDL104  DataLoader(..., shuffle=True, sampler=s)        -> DataLoader(..., sampler=s)
    DDL106  torch.save(model.state_dict(), p)               -> model.module.state_dict() (DDP), or
                                                               accelerator.unwrap_model(model).state_dict()
    DDL115  model.no_sync() on a line of its own            -> `with model.no_sync():` around the rest of its block
            (an autocast stops before the first backward); left alone when the rest holds a return, break or
            continue, or is empty: then the block is not unambiguous
    DDL118  accelerator.gather(x) in an evaluation          -> accelerator.gather_for_metrics(x)
The other rules need a decision (where the barrier goes, which rank is local): doctor reports them, unfixed.
"""

import difflib
import re

import libcst as cst
from doctor import FIXABLE, physical_lines
from libcst.metadata import MetadataWrapper, PositionProvider

# torch.cuda.amp's positional parameters, which torch.amp's signatures take in another place (after the device)
POSITIONAL = {
    "autocast": ["enabled", "dtype", "cache_enabled"],
    "GradScaler": ["init_scale", "growth_factor", "backoff_factor", "growth_interval", "enabled"],
}
STOPS = (cst.Return, cst.Break, cst.Continue)


def dotted(node):
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base else ""
    return ""


def char_column(line, byte_col):
    """ast counts columns in UTF-8 bytes, libcst in characters."""
    return len(line.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


class Fixer(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, targets, uses_accelerate, amp_names):
        super().__init__()
        self.targets = targets  # (line, column) -> code
        self.uses_accelerate = uses_accelerate
        self.amp_names = amp_names  # names imported from torch.cuda.amp whose import is rewritten
        self.fixed = []

    def at(self, node, code):
        start = self.get_metadata(PositionProvider, node).start
        return self.targets.get((start.line, start.column)) == code

    def done(self, node, code):
        self.fixed.append((self.get_metadata(PositionProvider, node).start.line, code))

    # DDL102 -------------------------------------------------------------------------------------------------
    def leave_ImportFrom(self, original, updated):
        if self.at(original, "DDL102") and self.amp_names:
            self.done(original, "DDL102")
            return updated.with_changes(module=cst.parse_expression("torch.amp"))
        return updated

    def amp_call(self, call):
        """torch.amp's spelling of a torch.cuda.amp autocast/GradScaler call: the device first, the rest by
        keyword."""
        name = dotted(call.func).rsplit(".", 1)[-1]
        args, positional = [], POSITIONAL[name]
        for i, arg in enumerate(call.args):
            if arg.keyword is None and arg.star == "" and i < len(positional):
                arg = arg.with_changes(
                    keyword=cst.Name(positional[i]),
                    equal=cst.AssignEqual(
                        whitespace_before=cst.SimpleWhitespace(""),
                        whitespace_after=cst.SimpleWhitespace(""),
                    ),
                )
            args.append(arg)
        device = cst.Arg(cst.SimpleString('"cuda"'))
        if args:
            device = device.with_changes(
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            )
        func = call.func
        if isinstance(func, cst.Attribute):
            func = cst.parse_expression(f"torch.amp.{name}")
        return call.with_changes(func=func, args=[device, *args])

    # every call -----------------------------------------------------------------------------------------------
    def leave_Call(self, original, updated):
        name = dotted(original.func)
        if name in ("torch.cuda.amp.autocast", "torch.cuda.amp.GradScaler") and self.at(
            original.func, "DDL102"
        ):
            self.done(original, "DDL102")
            return self.amp_call(updated)
        if (
            name in self.amp_names
        ):  # `autocast(...)` imported from torch.cuda.amp, now from torch.amp
            return self.amp_call(updated)
        if self.at(original, "DDL104"):
            args = [a for a in updated.args if not (a.keyword and a.keyword.value == "shuffle")]
            if len(args) < len(updated.args):
                args[-1] = args[-1].with_changes(comma=updated.args[-1].comma)
                self.done(original, "DDL104")
                return updated.with_changes(args=args)
        if self.at(original, "DDL106") and updated.args:
            saved = updated.args[0].value
            if isinstance(saved, cst.Call) and isinstance(saved.func, cst.Attribute):
                owner = saved.func.value
                if self.uses_accelerate:
                    unwrapped = cst.Call(
                        func=cst.parse_expression("accelerator.unwrap_model"), args=[cst.Arg(owner)]
                    )
                else:
                    unwrapped = cst.Attribute(value=owner, attr=cst.Name("module"))
                saved = saved.with_changes(func=saved.func.with_changes(value=unwrapped))
                self.done(original, "DDL106")
                return updated.with_changes(
                    args=[updated.args[0].with_changes(value=saved), *updated.args[1:]]
                )
        if self.at(original, "DDL118") and isinstance(updated.func, cst.Attribute):
            self.done(original, "DDL118")
            return updated.with_changes(
                func=updated.func.with_changes(attr=cst.Name("gather_for_metrics"))
            )
        return updated

    # DDL115 -------------------------------------------------------------------------------------------------
    def leave_IndentedBlock(self, original, updated):
        return updated.with_changes(body=self.wrap(original.body, updated.body))

    def leave_Module(self, original, updated):
        return updated.with_changes(body=self.wrap(original.body, updated.body))

    def wrap(self, originals, statements):
        statements = list(statements)
        for i in reversed(range(len(originals))):
            line = originals[i]
            if not (
                isinstance(line, cst.SimpleStatementLine)
                and len(line.body) == 1
                and isinstance(line.body[0], cst.Expr)
                and self.at(line.body[0], "DDL115")
            ):
                continue
            call = statements[i].body[0].value
            rest = statements[i + 1 :]
            if dotted(call.func).endswith("autocast"):  # the backward runs outside autocast
                ends = [j for j, s in enumerate(rest) if ".backward(" in cst.Module([s]).code]
                rest = rest[: ends[0]] if ends else rest
            if not rest or any(self.stops(s) for s in rest):
                continue  # nothing to wrap, or a jump out of it: not unambiguous
            if dotted(call.func).endswith("no_sync") and any(self.steps(s) for s in rest):
                continue  # the step under no_sync would use unsynchronised gradients: ranks diverge
            block = cst.With(
                items=[cst.WithItem(call)],
                body=cst.IndentedBlock(body=rest),
                leading_lines=statements[i].leading_lines,
            )
            statements[i : i + 1 + len(rest)] = [block]
            self.done(line.body[0], "DDL115")
        return statements

    @staticmethod
    def steps(statement):
        """Whether a statement calls an optimizer step (`optimizer.step()`, `scaler.step(optimizer)`)."""
        return any(
            isinstance(n, cst.Call)
            and isinstance(n.func, cst.Attribute)
            and n.func.attr.value == "step"
            for n in walk(statement)
        )

    @staticmethod
    def stops(statement):
        found = []

        class Finder(cst.CSTVisitor):
            def visit_FunctionDef(self, node):
                return False  # a return of a nested function is its own

            def on_visit(self, node):
                if isinstance(node, STOPS):
                    found.append(node)
                return super().on_visit(node)

        statement.visit(Finder())
        return bool(found)


def walk(node):
    """Every node under `node`, itself included."""
    yield node
    for child in node.children:
        yield from walk(child)


def fix_source(source, findings, uses_accelerate=False):
    """(the fixed source, [(line, code), ...] fixed). `findings` are doctor's, for this source; those it marked
    not fixable (the rewrite would change what some path does) are left as they are."""
    lines = physical_lines(source)
    targets = {
        (f.line, char_column(lines[f.line - 1], f.col)): f.code
        for f in findings
        if f.code in FIXABLE and f.fixable
    }
    if not targets:
        return source, []
    module = cst.parse_module(source)
    amp_names = set()
    imports_found = any(
        f.code == "DDL102" and lines[f.line - 1].lstrip().startswith("from torch.cuda.amp import")
        for f in findings
    )
    for statement in (
        module.body if imports_found else []
    ):  # `from torch.cuda.amp import autocast, GradScaler`: both rewritable
        for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else []:
            if isinstance(small, cst.ImportFrom) and dotted(small.module) == "torch.cuda.amp":
                names = small.names if isinstance(small.names, (list, tuple)) else []
                plain = [
                    a.name.value for a in names if isinstance(a.name, cst.Name) and not a.asname
                ]
                if names and len(plain) == len(names) and set(plain) <= set(POSITIONAL):
                    amp_names |= set(plain)
    fixer = Fixer(targets, uses_accelerate, amp_names)
    fixed = MetadataWrapper(module).visit(fixer)
    return fixed.code, sorted(set(fixer.fixed))


def unified_diff(path, before, after):
    return "".join(
        difflib.unified_diff(
            re.split(r"(?<=\r\n)|(?<=\r)(?!\n)|(?<=\n)", before),
            re.split(r"(?<=\r\n)|(?<=\r)(?!\n)|(?<=\n)", after),
            fromfile=str(path),
            tofile=str(path),
        )
    )
