"""jaxlib's Shardy as the oracle: parse + verify + print many small modules in one child process.

A case is a mesh body, a sharding attribute text and a tensor type; it is wrapped into

    sdy.mesh @mesh = <mesh>
    func.func @f(%arg0: <type> {sdy.sharding = <sharding>}) -> <type> { return %arg0 : <type> }

jaxlib reports either the printed mesh and sharding, or its first diagnostic without the
location/op prefix (`'func.func' op arg 0 - `, `custom op 'sdy.mesh' `).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

from sharding.errors import ShardingError, ShardingParseError
from sharding.syntax import parse_mesh_table, parse_tensor_sharding, parse_tensor_sharding_body
from sharding.verify import sharding_errors
from tests.jaxlib_child import run_child

# Random cases per differential test against this oracle (drawing them is most of the test's
# time); SHARDING_ORACLE_CASES=400 runs the earlier default.
ORACLE_CASES = int(os.environ.get("SHARDING_ORACLE_CASES", "200"))

_CODE = r"""
import re
from jax._src.interpreters import mlir as jmlir
from jax._src.lib.mlir import ir

PREFIX = re.compile(r"^(?:'func\.func' op arg \d+ - |custom op 'sdy\.(?:mesh|sharding_constraint)' |'sdy\.sharding_constraint' op )")
ctx = jmlir.make_ir_context()
ctx.enable_multithreading(False)
RESULT = []
with ctx, ir.Location.unknown():
    for case in PAYLOAD:
        try:
            printed = str(ir.Module.parse(case["module"]))
        except ir.MLIRError as e:
            diags = e.error_diagnostics
            RESULT.append({"ok": False, "error": PREFIX.sub("", diags[0].message) if diags else str(e)})
            continue
        mesh = sharding = None
        for line in printed.splitlines():
            line = line.strip()
            if line.startswith("sdy.mesh @mesh = "):
                mesh = line[len("sdy.mesh @mesh = "):]
            if "{sdy.sharding = " in line:
                sharding = line.split("{sdy.sharding = ", 1)[1].rsplit("}) -> ", 1)[0]
            if "sdy.sharding_constraint %arg0 " in line:
                sharding = line.split("sdy.sharding_constraint %arg0 ", 1)[1].rsplit(" : ", 1)[0]
        RESULT.append({"ok": True, "mesh": mesh, "sharding": sharding})
"""


@dataclass(frozen=True)
class Case:
    mesh: str
    """Body of `sdy.mesh @mesh = ...`."""
    sharding: str
    """The attribute, e.g. `#sdy.sharding<@mesh, [{"a"}]>`."""
    type: str
    """The tensor type, e.g. `tensor<8x8xf32>`."""
    form: str = "arg"
    """"arg": a func argument attribute; "constraint": the bare body of a pretty
    `sdy.sharding_constraint` (`sharding` is then `<@mesh, [...]>`)."""

    def module(self) -> str:
        if self.form == "constraint":
            return (
                f"sdy.mesh @mesh = {self.mesh}\n"
                f"func.func @f(%arg0: {self.type}) -> {self.type} {{\n"
                f"  %0 = sdy.sharding_constraint %arg0 {self.sharding} : {self.type}\n"
                f"  return %0 : {self.type}\n}}"
            )
        return (
            f"sdy.mesh @mesh = {self.mesh}\n"
            f"func.func @f(%arg0: {self.type} {{sdy.sharding = {self.sharding}}}) -> {self.type} "
            f"{{ return %arg0 : {self.type} }}"
        )


def jaxlib_results(cases: list[Case]) -> list[dict]:
    """One child process for all cases."""
    return run_child(_CODE, [dict(asdict(c), module=c.module()) for c in cases])


def shape_of(type_text: str):
    """`tensor<8x?xf32>` -> (8, None); other types are passed through as text."""
    if not type_text.startswith("tensor<") or type_text.startswith("tensor<*"):
        return type_text
    dims = type_text[len("tensor<") : -1].split("x")[:-1]
    return tuple(None if d == "?" else int(d) for d in dims)


def our_results(case: Case) -> dict:
    """What this library says about a case: printed forms, or candidate messages."""
    try:
        table = parse_mesh_table(f"sdy.mesh @mesh = {case.mesh}")
    except ShardingParseError as e:
        return {"ok": False, "errors": [e.message]}
    try:
        if case.form == "constraint":
            sharding, end = parse_tensor_sharding_body(case.sharding)
            if case.sharding[end:].strip():
                return {"ok": False, "errors": ["(text after the sharding)"]}
        else:
            sharding = parse_tensor_sharding(case.sharding)
    except ShardingParseError as e:
        return {"ok": False, "errors": [e.message]}
    try:
        errors = sharding_errors(sharding, mesh=table, shape=shape_of(case.type))
    except ShardingError as e:
        return {"ok": False, "errors": [str(e)]}
    if errors:
        return {"ok": False, "errors": list(errors)}
    printed = sharding.body() if case.form == "constraint" else str(sharding)
    return {"ok": True, "mesh": table["mesh"].body(), "sharding": printed}


def mismatches(cases: list[Case], theirs: list[dict]) -> list[str]:
    """Human-readable differences between jaxlib and this library."""
    out = []
    for case, their in zip(cases, theirs):
        ours = our_results(case)
        if their["ok"]:
            if not ours["ok"] or ours["mesh"] != their["mesh"] or ours["sharding"] != their["sharding"]:
                out.append(f"{case}\n  jaxlib: {their}\n  ours:   {ours}")
        elif ours["ok"] or their["error"] not in ours["errors"]:
            out.append(f"{case}\n  jaxlib: {their['error']!r}\n  ours:   {ours}")
    return out


_ATTR_CODE = r"""
from jax._src.interpreters import mlir as jmlir
from jax._src.lib.mlir import ir

ctx = jmlir.make_ir_context()
ctx.enable_multithreading(False)
RESULT = []
with ctx, ir.Location.unknown():
    for prefix, attr in PAYLOAD:
        text = prefix + "func.func @f(%arg0: tensor<8xf32> {sdy.x = " + attr + "}) -> tensor<8xf32> { return %arg0 : tensor<8xf32> }"
        try:
            printed = str(ir.Module.parse(text))
        except ir.MLIRError as e:
            RESULT.append({"ok": False, "error": e.error_diagnostics[0].message})
            continue
        lines = [l.strip() for l in printed.splitlines()]
        attr_line = next(l for l in lines if "{sdy.x = " in l)
        RESULT.append({
            "ok": True,
            "meshes": [l for l in lines if l.startswith("sdy.mesh ")],
            "attr": attr_line.split("{sdy.x = ", 1)[1].rsplit("}) -> ", 1)[0],
        })
"""


def jaxlib_print_attributes(items: list[tuple[str, str]]) -> list[dict]:
    """jaxlib's printed form of `(mesh ops, attribute)` pairs; the attribute is put on a func arg
    under a name Shardy does not verify (`sdy.x`)."""
    return run_child(_ATTR_CODE, items)
