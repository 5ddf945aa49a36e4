"""`python -m sharding`: look at a sharding from the command line.

    python -m sharding show '<["x"=2, "y"=4]>' '#sdy.sharding<@mesh, [{"x"}, {"y"}]>' 6x8
    python -m sharding show 'sdy.mesh @a = <["x"=4]> sdy.mesh @b = <["y"=4]>' '<@b, [{"y"}]>' 7 --svg out.svg
    python -m sharding hlo '<["x"=8]>' '#sdy.sharding<@m, [{"x":(2)2}, {"x":(1)2}]>'
    python -m sharding reshard '<["x"=2, "y"=4]>' '<@mesh, [{"x"}, {"y"}]>' '<@mesh, [{"y"}, {"x"}]>' 8192x8192 --dtype bf16
    python -m sharding reshard ... --links 'x=2.7e-6,19.3e9' --algorithm bidirectional_ring --json --svg traffic.svg

The mesh is a mesh body (`<[...]>`, `#sdy.mesh<...>`, `mesh<...>`), bound to whatever name the
sharding uses, or `sdy.mesh @name = <...>` ops looked up by name. The shape is `6x8`, `6,8`,
`[6, 8]`, `tensor<6x8xf32>` or `()` for a scalar.
"""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import json
import math
import importlib.util
import os
import pathlib
import re
import shutil
import sys

from ._checks import parse_mesh
from ._mlir_lexer import to_int
from .cost import ALGORITHMS, default_links
from .errors import INT64_MAX, ShardingError, shown
from .hlo import to_hlo_sharding
from .reshard import reshard_plan
from .tensor_sharding import TensorSharding
from .visualization import TrafficPicture, visualize


def parse_shape(text: str) -> tuple[int, ...]:
    """`6x8`, `6,8`, `[6, 8]`, `(6, 8)`, `tensor<6x8xf32>`, `()` -> a shape."""
    body = text.strip()
    tensor = re.fullmatch(r"tensor<(.*)>", body)
    if tensor:
        body = tensor[1].rsplit("x", 1)[0] if "x" in tensor[1] else ""
    body = body.strip("()[] ")
    if not body:
        return ()
    parts = re.split(r"\s*[x,]\s*", body)
    dims = tuple(to_int(p) if re.fullmatch(r"[0-9]+", p) else -1 for p in parts)  # ASCII digits only
    if not all(0 <= d <= INT64_MAX for d in dims):
        raise ShardingError(f"expected a shape such as 6x8, 6,8 or tensor<6x8xf32> (int64 dims), got: {shown(text)}")
    return dims


_NUMBER = r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"


def parse_links(text: str) -> dict[str, tuple[float, float]]:
    """`--links`: `ReshardPlan.cost`'s `links` mapping, `{"x": (2.7e-6, 19.3e9)}`, or the same as
    `x=2.7e-6,19.3e9;y=0.6e-6,87.7e9` (axis = alpha seconds, beta bytes per second)."""
    body = text.strip()
    if body.startswith("{"):
        try:
            links = ast.literal_eval(body)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            links = None
        ok = isinstance(links, dict) and all(
            isinstance(k, str) and isinstance(v, (tuple, list)) and len(v) == 2
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v) for k, v in links.items())
        if not ok:
            raise ShardingError(f'expected --links as {{"axis": (alpha_s, beta_bytes_per_s), ...}}, got: {text!r}')
        out = {k: (float(v[0]), float(v[1])) for k, v in links.items()}
    else:
        out = {}
        for item in filter(None, (part.strip() for part in body.split(";"))):
            m = re.fullmatch(rf"([^=\s]+)\s*=\s*({_NUMBER})\s*,\s*({_NUMBER})", item)
            if not m:
                raise ShardingError(f"expected --links as AXIS=ALPHA,BETA[;AXIS=ALPHA,BETA...] (seconds, bytes per "
                                    f"second), got: {item!r}")
            out[m[1].strip('"')] = (float(m[2]), float(m[3]))
    for name, (alpha, beta) in out.items():
        if not (math.isfinite(alpha) and alpha >= 0 and math.isfinite(beta) and beta > 0):
            raise ShardingError(f"--links {name}: expected alpha >= 0 seconds and beta > 0 bytes per second, "
                                f"got: {alpha!r}, {beta!r}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sharding", description="Look at Shardy shardings.")
    parser.add_argument("--version", action="version", version=f"%(prog)s (layout-toolkit {_version()})")
    sub = parser.add_subparsers(dest="command", required=True)
    mesh_help = "the mesh: <[\"x\"=2, \"y\"=4]>, #sdy.mesh<...>, or sdy.mesh @name = <...> ops"
    sharding_help = "the sharding: #sdy.sharding<@mesh, [{\"x\"}, {}]> or its <...> body"
    show = sub.add_parser("show", help="which device holds which block (text grid; optional SVG/PNG)")
    show.add_argument("mesh", help=mesh_help)
    show.add_argument("sharding", help=sharding_help)
    show.add_argument("shape", help="the global shape: 6x8, 6,8, [6, 8], tensor<6x8xf32> or () for a scalar")
    show.add_argument("--svg", metavar="PATH", help="also write an SVG picture")
    show.add_argument("--png", metavar="PATH", help="also write a PNG picture (needs matplotlib: the [plot] extra)")
    hlo = sub.add_parser("hlo", help="the GSPMD HloSharding text XLA's export prints")
    hlo.add_argument("mesh", help=mesh_help)
    hlo.add_argument("sharding", help=sharding_help)
    reshard = sub.add_parser("reshard", help="the collectives Shardy emits, their traffic and cost")
    reshard.add_argument("mesh", help=mesh_help)
    reshard.add_argument("source", help="the sharding the array has")
    reshard.add_argument("target", help="the sharding it should get")
    reshard.add_argument("shape", help="the global shape: 6x8, 6,8, [6, 8], tensor<6x8xf32> or () for a scalar")
    reshard.add_argument("--dtype", default="f32", help="element type (bf16, f32, s8, ...; default f32)")
    reshard.add_argument("--links", metavar="LINKS", type=_links_arg,
                         help="per-axis latency and bandwidth, as ReshardPlan.cost takes them: 'x=2.7e-6,19.3e9;y=...' "
                              "or '{\"x\": (2.7e-6, 19.3e9)}' (alpha seconds, beta bytes/s; default: DTensor's, "
                              "see the README)")
    reshard.add_argument("--algorithm", choices=ALGORITHMS, help="the time column to show (default: both)")
    reshard.add_argument("--json", action="store_true", help="print the plan, traffic and cost as JSON instead")
    reshard.add_argument("--svg", metavar="PATH", help="also write the traffic heatmaps per step (SVG)")
    reshard.add_argument("--png", metavar="PATH", help="also write a picture of bytes and time per step")
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except ShardingError as e:
        print(f"error: {e}", file=sys.stderr)
    except BrokenPipeError:
        # The reader went away (`| head`): say so once, and keep Python from complaining at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print("error: standard output was closed before everything was written", file=sys.stderr)
    except OSError as e:
        print(f"error: {e.strerror or e}: {e.filename}" if e.filename else f"error: {e}", file=sys.stderr)
    return 1


def _run(args) -> int:
    if args.command == "reshard":
        for path, suffix in ((args.svg, ".svg"), (args.png, ".png")):
            if path:
                _check_output(path, suffix)
        plan = reshard_plan(TensorSharding.parse(args.source), TensorSharding.parse(args.target),
                            parse_mesh(args.mesh), parse_shape(args.shape), dtype=args.dtype)
        algorithms = (args.algorithm,) if args.algorithm else ALGORITHMS
        if args.json:
            print(json.dumps(_plan_json(plan, args.links, algorithms), indent=1))
        else:
            print("\n".join(map(str, plan.steps)) if plan.steps else "(no collectives: the reshard is a no-op)")
            print()
            print(plan.report(args.links, algorithms=algorithms))
        sys.stdout.flush()
        if args.svg:
            TrafficPicture(plan).save(args.svg)
        if args.png:
            plan.plot(args.png, args.links)
        return 0
    mesh = parse_mesh(args.mesh)
    sharding = TensorSharding.parse(args.sharding)
    if args.command == "hlo":
        print(to_hlo_sharding(sharding, mesh))
        return 0
    outputs = [(path, suffix) for path, suffix in ((args.svg, ".svg"), (args.png, ".png")) if path]
    for path, suffix in outputs:  # before any output, so a bad path leaves nothing half done
        _check_output(path, suffix)
    picture = visualize(sharding, mesh, parse_shape(args.shape))
    print(picture.text(width=shutil.get_terminal_size().columns))
    sys.stdout.flush()
    for path, _ in outputs:
        picture.save(path)
    return 0


def _links_arg(text: str):
    try:
        return parse_links(text)
    except ShardingError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _plan_json(plan, links, algorithms) -> dict:
    """The plan, its traffic (bytes) and cost (seconds) as plain data."""
    tr = plan.traffic
    costs = {a: plan.cost(links, algorithm=a) for a in algorithms}
    table = default_links(plan.mesh_of(plan.source))
    table.update(links or {})
    steps = []
    for i, step in enumerate(plan.steps):
        sent = tr.bytes_sent.values[i]
        steps.append({"op": str(step), "kind": step.kind, "out_sharding": str(step.out_sharding),
                      "max_bytes_sent_per_device": int(sent.max(initial=0)), "bytes_sent": int(sent.sum()),
                      "messages": int(tr.messages.values[i]),
                      "bytes_crossing": {str(a): int(v) for a, v in zip(tr.axis.values, tr.bytes_crossing.values[i])},
                      "seconds": {a: c.steps[i] for a, c in costs.items()}})
    return {"source": str(plan.source), "target": str(plan.target), "shape": list(plan.shape),
            "dtype": str(plan.dtype), "steps": steps,
            "seconds": {a: c.total for a, c in costs.items()},
            "links": {k: {"alpha_s": a, "beta_bytes_per_s": b} for k, (a, b) in table.items()},
            "dtensor_redistribute_cost_us": plan.dtensor_cost() if math.isfinite(plan.dtensor_cost()) else None,
            "reaches_target": plan.reaches_target, "error": plan.error}


def _check_output(path: str, suffix: str) -> None:
    target = pathlib.Path(path)
    if target.suffix.lower() != suffix:
        raise ShardingError(f"expected a {suffix} file name for --{suffix[1:]}, got: {path}")
    if target.is_dir():
        raise ShardingError(f"--{suffix[1:]} {path} is a directory; give a file name")
    if not target.parent.is_dir():
        raise ShardingError(f"--{suffix[1:]} {path}: directory {target.parent} does not exist")
    if suffix == ".png" and importlib.util.find_spec("matplotlib") is None:
        raise ShardingError("--png needs matplotlib (pip install 'layout-toolkit[plot]'); --svg works without it")


def _version() -> str:
    try:
        return importlib.metadata.version("layout-toolkit")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


if __name__ == "__main__":
    sys.exit(main())
