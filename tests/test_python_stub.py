#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_python_stub.py: eht/__init__.pyi declares the eht module as it is. Type checkers read only the
stub, so a name missing there is an error in every user's code ("Module has no attribute Group").
Checked with ast and inspect (no mypy needed): every public module-level name (and __all__ lists
them all), every public method, property, class attribute and instance attribute (self.X = ...) of
each public class, the context-manager methods, and each function's and method's parameter names;
and the stub declares nothing the module lacks."""
import ast
import inspect
import os
import sys
import textwrap

import eht

# Type aliases that exist only for annotations.
STUB_ONLY = {"Buffer", "Device"}
DUNDERS = {"__enter__", "__exit__", "__iter__", "__len__", "__getitem__", "__contains__"}


def stub_path():
    return os.path.join(os.path.dirname(eht.__file__), "__init__.pyi")


def ast_params(fn):
    a = fn.args
    names = [x.arg for x in getattr(a, "posonlyargs", [])] + [x.arg for x in a.args]
    if a.vararg:
        names.append("*" + a.vararg.arg)
    names += [x.arg for x in a.kwonlyargs]
    if a.kwarg:
        names.append("**" + a.kwarg.arg)
    return names


def sig_params(obj):
    out = []
    for p in inspect.signature(obj).parameters.values():
        prefix = "*" if p.kind == p.VAR_POSITIONAL else "**" if p.kind == p.VAR_KEYWORD else ""
        out.append(prefix + p.name)
    return out


def load_stub(name):
    """The body of python/eht/NAME.pyi ("__init__" for the package)."""
    with open(os.path.join(os.path.dirname(eht.__file__), name + ".pyi"), encoding="utf-8") as f:
        return ast.parse(f.read()).body


def names_of_body(body):
    """{name: ast node} of defs, classes and assignments in a module or class body; a re-export
    (`from .group import Group as Group`) is followed into that module's stub, and `from . import
    disk as disk` gives the marker "module"."""
    out = {}
    for node in body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            sub = names_of_body(load_stub(node.module)) if node.module else {}
            for a in node.names:
                out[a.asname or a.name] = "module" if not node.module else sub.get(a.name)
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = node
    return out


def instance_attrs(cls):
    """Public names a class's methods assign on self."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return set()
    out = set()
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        for t in targets:
            for e in (t.elts if isinstance(t, ast.Tuple) else [t]):
                if (isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "self"
                        and not e.attr.startswith("_")):
                    out.add(e.attr)
    return out


def class_members(cls):
    """{name: object} of the public (and context-manager) members eht defines on cls and its bases."""
    out = {}
    for k in reversed(cls.__mro__):
        if not k.__module__.startswith("eht"):
            continue
        for n, v in vars(k).items():
            if not n.startswith("_") or n in DUNDERS:
                out[n] = v
        for n in instance_attrs(k):
            out.setdefault(n, None)
    return out


def main():
    stub = names_of_body(load_stub("__init__"))
    fails = []
    # Submodules the package exports (eht.disk, eht.engram): declared as modules in the stub.
    for n in eht.__all__:
        if inspect.ismodule(getattr(eht, n, None)) and stub.get(n) != "module":
            fails.append("submodule %s is not re-exported by the stub (from . import %s as %s)" % (n, n, n))
    public = {n: getattr(eht, n) for n in dir(eht)
              if not n.startswith("_") and not inspect.ismodule(getattr(eht, n))}
    public["__version__"] = eht.__version__
    for n in sorted(public):
        if n not in stub:
            fails.append("module name %s is missing from the stub" % n)
        if n not in eht.__all__:
            fails.append("module name %s is missing from eht.__all__" % n)
    modules = {n for n in stub if stub[n] == "module"}
    for n in sorted(set(stub) - set(public) - STUB_ONLY - modules):
        fails.append("the stub declares %s, which the module lacks" % n)
    for n in sorted(set(eht.__all__) - set(public) - {m for m in eht.__all__ if inspect.ismodule(getattr(eht, m, None))}):
        fails.append("eht.__all__ names %s, which the module lacks" % n)
    for n, obj in sorted(public.items()):
        node = stub.get(n)
        if node is None or node == "module":
            continue
        if inspect.isfunction(obj):
            if not isinstance(node, ast.FunctionDef):
                fails.append("%s is a function, the stub declares it otherwise" % n)
            elif ast_params(node) != sig_params(obj):
                fails.append("%s(%s): the stub says (%s)" % (n, ", ".join(sig_params(obj)), ", ".join(ast_params(node))))
        if not inspect.isclass(obj) or not obj.__module__.startswith("eht"):
            continue
        if not isinstance(node, ast.ClassDef):
            fails.append("%s is a class, the stub declares it otherwise" % n)
            continue
        smembers = names_of_body(node.body)
        members = class_members(obj)
        for m in sorted(members):
            if m not in smembers:
                fails.append("%s.%s is missing from the stub" % (n, m))
                continue
            impl = members[m]
            fn = impl.__func__ if isinstance(impl, (staticmethod, classmethod)) else impl
            snode = smembers[m]
            if inspect.isfunction(fn) and isinstance(snode, ast.FunctionDef):
                if ast_params(snode) != sig_params(fn):
                    fails.append("%s.%s(%s): the stub says (%s)" % (n, m, ", ".join(sig_params(fn)),
                                                                    ", ".join(ast_params(snode))))
            elif inspect.isfunction(fn):
                fails.append("%s.%s is a method, the stub declares it otherwise" % (n, m))
        for m in sorted(set(smembers) - set(members)):
            if not m.startswith("_") or m in DUNDERS or m == "__init__":
                if m == "__init__" and "__init__" in vars(obj):
                    init = vars(obj)["__init__"]
                    if ast_params(smembers[m]) != sig_params(init):
                        fails.append("%s.__init__(%s): the stub says (%s)" % (n, ", ".join(sig_params(init)),
                                                                              ", ".join(ast_params(smembers[m]))))
                    continue
                fails.append("the stub declares %s.%s, which the module lacks" % (n, m))
    for f in fails:
        print("FAIL:", f)
    if fails:
        print("test_python_stub: %d difference(s) between eht and %s" % (len(fails), stub_path()))
        return 1
    print("test_python_stub: %d module names and their members agree with the stub" % len(public))
    return 0


if __name__ == "__main__":
    sys.exit(main())
