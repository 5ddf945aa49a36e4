"""Small modules with calls, shared by the call-graph pass tests (flatten, import, pre-order,
func edges, propagate-to-call)."""

MESH = 'sdy.mesh @mesh = <["x"=2, "y"=2]>\n'
S_X = '#sdy.sharding<@mesh, [{"x"}]>'


def func(name, body_calls=(), private=True, arg_sharding=None, res_sharding=None, attrs=""):
    arg = "%arg0: tensor<8xf32>" + (f" {{sdy.sharding = {arg_sharding}}}" if arg_sharding else "")
    res = f"(tensor<8xf32> {{sdy.sharding = {res_sharding}}})" if res_sharding else "tensor<8xf32>"
    lines = [f"func.func {'private ' if private else ''}@{name}({arg}) -> {res}{attrs} {{"]
    prev = "%arg0"
    for i, callee in enumerate(body_calls):
        lines.append(f"  %{i} = call @{callee}({prev}) : (tensor<8xf32>) -> tensor<8xf32>")
        prev = f"%{i}"
    lines.append(f"  %n = stablehlo.negate {prev} : tensor<8xf32>")
    lines.append("  return %n : tensor<8xf32>\n}")
    return "\n".join(lines) + "\n"


# main calls foo twice and bar once; foo calls bar: callees are visited before callers.
DIAMOND = (MESH + func("main", ["foo", "bar", "foo"], private=False, arg_sharding=S_X)
           + func("foo", ["bar"], res_sharding=S_X) + func("bar"))
# The callee is defined before its caller, and an unused func calls it too.
CALLEE_FIRST = (MESH + func("bar") + func("unused", ["bar"]) + func("foo", ["bar", "bar"])
                + func("main", ["foo", "foo"], private=False))
TEXTS = [DIAMOND, CALLEE_FIRST]
